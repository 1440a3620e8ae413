/**
 * Review 2: the fence is checked before a replica's await, the apply after.
 *
 * ReplicaRole.append judges the term (terms.judge), then sleeps (apply delay,
 * a slow node), then applies the batch and takes the lease. A promotion's
 * fence (prepareTerm) that lands during the sleep does not stop the batch: the
 * replica answers the fence with its LSN before the batch, then applies the
 * old master's record and acks it to the old master. The cut-off old master
 * counts those acks (the calls left before the partition), so it acknowledges
 * a write the promotion did not see: the new master lacks it and the
 * replicas silently skip the new master's PROMOTE record at the same LSN
 * (records are skipped by LSN alone).
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { memberStub as nodeStub } from "../workers/cluster";

import { call, exec, freshCluster, query, status, verify, waitUntil } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const REPLICAS = ["replica-1", "replica-2", "replica-3", "replica-4"];

describe("review finding (fixed): a fence during a slow replica's apply", () => {
  it("the cut-off master acknowledges nothing, and no replica serves its write as the new master's state", async () => {
    const c = freshCluster("zz-r2-fence");
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE)" }])).status,
    ).toBe(200);
    const tuned = await call("PATCH", `/admin/clusters/${c}/tunables`, {
      body: { debug_fault_injection: true, rep_timeout_ms: 2500, commit_timeout_ms: 8000 },
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    for (const k of ["a0", "a1"]) {
      expect(
        (await exec(c, [{ sql: "INSERT INTO t (k) VALUES (?)", params: [k] }], k)).status,
      ).toBe(200);
    }
    await waitUntil("all coherent", async () => {
      const s = (await status(c)).body as unknown as {
        master: { lsn: number };
        replicas: { state: string; ackedLsn: number }[];
      };
      return s.replicas.every((r) => r.state === "coherent" && r.ackedLsn === s.master.lsn);
    });
    // Every replica is slow: 1500 ms per message.
    for (const id of REPLICAS) {
      const d = await call("POST", `/admin/clusters/${c}/replicas/${id}/delay`, {
        body: { ms: 1500 },
      });
      expect(d.status, JSON.stringify(d.body)).toBe(200);
    }
    await sleep(1700); // heartbeats already in flight drain

    // W goes to the master; its records reach the replicas, which sleep.
    const w = exec(c, [{ sql: "INSERT INTO t (k) VALUES ('w')" }], "w");
    await sleep(200);
    // The master is cut off (clients still reach it), and a promotion runs without it.
    const cut = await call("POST", `/admin/clusters/${c}/members/node-0/partition`, {
      body: { partitioned: true },
    });
    expect(cut.status).toBe(200);
    const promoted = await call<{ master: string; term: number }>(
      "POST",
      `/admin/clusters/${c}/promote`,
      {
        body: { force: true },
      },
    );
    console.log("promote", promoted.status, JSON.stringify(promoted.body));
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
    const newMaster = promoted.body.master;

    const wr = await w;
    console.log("W on the cut-off master:", wr.status, JSON.stringify(wr.body));

    await sleep(2000);
    // The slow replicas are slow no more.
    for (const id of REPLICAS.filter((r) => r !== newMaster))
      await nodeStub(env, c, id).setFaultDelay(0);
    await sleep(2000);
    const onNew = await nodeStub(env, c, newMaster).query({
      cluster: c,
      sql: "SELECT k FROM t ORDER BY k",
      params: [],
      consistency: "any",
      minLsn: 0,
    } as never);
    console.log("new master rows:", JSON.stringify(onNew));
    const per: Record<string, unknown> = {};
    for (const id of REPLICAS.filter((r) => r !== newMaster)) {
      const r = await query(c, "SELECT k FROM t WHERE k = 'w'", {
        replica: id,
        consistency: "any",
      });
      per[id] = { status: r.status, rows: r.body.rows, servedBy: r.body.servedBy };
    }
    console.log("W on the other replicas:", JSON.stringify(per));
    const v = await verify(c);
    console.log("verify:", JSON.stringify(v.body));
    const strong = await query(c, "SELECT k FROM t ORDER BY k", { replica: "master" });
    console.log("strong read on the master:", strong.status, JSON.stringify(strong.body));

    const strongReplica = await query(c, "SELECT k FROM t WHERE k = 'w'", { replica: "replica-2" });
    console.log(
      "strong read on replica-2:",
      strongReplica.status,
      JSON.stringify(strongReplica.body),
    );

    // Fixed: a replica judges the term again after the wait, and refuses; so the
    // cut-off master never acknowledges W, and no node that took W serves it as
    // the new master's state (the record at W's LSN has another term there: rebuilt).
    expect(wr.status, "the cut-off master acknowledges nothing").not.toBe(200);
    if (strongReplica.status === 200) {
      expect(JSON.stringify(strongReplica.body.rows), "replica-2 serves no W").not.toContain('"w"');
    }
  }, 60_000);
});
