/**
 * Attack 18 (held acks across a promotion): replica-1 applies an
 * unacknowledged tail record (z, term 1) and holds its ack
 * (debug_ack_delay_ms). It is down while the others promote a new master
 * whose log ends before z; the held ack falls due while it is down and stays
 * ready in DeferredAcks. The new master finds the tail (diverged), rebuilds
 * replica-1 from a snapshot at its own LSN, below z, and the first reply after
 * the rebuild carries the stale ack of z's LSN: the master then counts
 * replica-1 as having an LSN it has not applied (rewound() lowers sentLsn but
 * keeps the ready ack), and the next commit at that LSN counts replica-1's
 * ack before replica-1 has it.
 *
 * Promise broken: acks are never reported for LSNs a replica has not applied.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { nodeStub } from "../durable-objects/node-rpc";
import { call, exec, freshCluster, query, status, waitUntil } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("attack 18: a held ack of a tail the new master does not have", () => {
  it("is not reported to the new master after the replica is rebuilt below it", async () => {
    const c = freshCluster("a18-stale");
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT)" }])).status,
    ).toBe(200);
    const tuned = await call("PATCH", `/admin/clusters/${c}/tunables`, {
      body: {
        debug_fault_injection: true,
        rep_timeout_ms: 2000,
        commit_timeout_ms: 3000,
        coherency_rejoin_penalty_ms: 0,
        debug_ack_delay_ms: 1000,
      },
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('a')" }], "a")).status).toBe(200);
    for (const id of ["replica-2", "replica-3", "replica-4"]) {
      expect((await call("POST", `/admin/clusters/${c}/replicas/${id}/stop`)).status).toBe(200);
    }
    const before = (await status(c)).body.master.lsn;
    // Two tail records: the new master's first record of term 2 takes the first LSN.
    const z1 = exec(c, [{ sql: "INSERT INTO t (k) VALUES ('z1')" }], "z1");
    const z2 = exec(c, [{ sql: "INSERT INTO t (k) VALUES ('z2')" }], "z2");
    await waitUntil("replica-1 applied z1 and z2", async () => {
      const r = await query(c, "SELECT k FROM t", { replica: "replica-1", consistency: "any" });
      return r.status === 200 && r.body.appliedLsn >= before + 2;
    });
    const tailLsn = before + 2;
    // replica-1 goes down holding z's ack (due in about a second).
    expect((await call("POST", `/admin/clusters/${c}/replicas/replica-1/stop`)).status).toBe(200);
    console.log("z:", (await z1).status, (await z2).status);
    expect((await call("POST", `/admin/clusters/${c}/master/lose`)).status).toBe(202);
    for (const id of ["replica-2", "replica-3", "replica-4"])
      await nodeStub(env, c, id).setStopped(false);
    const p2 = await call<{ master: string; term: number }>(
      "POST",
      `/admin/clusters/${c}/promote`,
      { body: {} },
    );
    console.log("promote:", p2.status, JSON.stringify(p2.body));
    expect(p2.status).toBe(200);
    await sleep(1300); // the held ack fell due while replica-1 was down
    await nodeStub(env, c, "replica-1").setStopped(false);
    // The new master rebuilds replica-1 (its tail z is not in term 2's log).
    let seen: { ackedLsn: number; state: string; master: number } | null = null;
    await waitUntil(
      "replica-1 rebuilt and acking",
      async () => {
        const s = await status(c);
        const r1 = s.body.replicas.find((r) => r.id === "replica-1") as
          | { ackedLsn: number; state: string; snapshots: number }
          | undefined;
        if (r1 === undefined || r1.snapshots < 1) return false;
        seen = { ackedLsn: r1.ackedLsn, state: r1.state, master: s.body.master.lsn };
        return true;
      },
      15_000,
    );
    await sleep(1500);
    const s = await status(c);
    const r1 = s.body.replicas.find((r) => r.id === "replica-1");
    const applied = (
      await query(c, "SELECT k FROM t ORDER BY id", { replica: "replica-1", consistency: "any" })
    ).body;
    console.log(
      "after rebuild:",
      JSON.stringify(seen),
      "now",
      JSON.stringify(r1),
      "master lsn",
      s.body.master.lsn,
      "replica-1 has",
      JSON.stringify(applied),
    );
    // replica-1 has no record at z's LSN in term 2's log: nothing may say it acked it.
    expect(applied.appliedLsn).toBeLessThan(tailLsn);
    expect(
      r1?.ackedLsn,
      "the master's ackedLsn for replica-1 vs what replica-1 has applied",
    ).toBeLessThanOrEqual(applied.appliedLsn);
  }, 60_000);
});
