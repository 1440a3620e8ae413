/**
 * Review finding (fixed): the old master crashes while the handover's
 * directory call is in flight (the directory moves; the old master never
 * learns the answer). Before the fix it restarted as master of term 1. node.ts checks the
 * directory only on calls that go through master(); but MasterCore.load()
 * starts every relay in the constructor, and alarm() runs the master's jobs
 * (heartbeats) without any check. So the restarted old master - a zombie of
 * term 1 - keeps sending heartbeats and granting leases to every replica that
 * has not heard of term 2. The new master's relay to it fails with "this node
 * is the master, not a replica" (no staleTerm), and the zombie's relay to the
 * new master fails the same way, so neither learns anything.
 *
 * Calls to the new master are made on its stub directly (what a front door in
 * another isolate, whose cache is fresh, does: onMaster -> takeOver -> act);
 * this test's own front-door isolate still caches node-0 and would end the
 * zombie with its first call to master(), which is exactly the check the
 * relays and alarms skip.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ExecRequest, QueryRequest, ReplicaQueryOutcome } from "../core/protocol";
import type { ClusterDirectory } from "../durable-objects/directory";
import { memberStub as nodeStub } from "../workers/cluster";
import { call, exec, freshCluster, patchTunables, waitUntil } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function directory(c: string): DurableObjectStub<ClusterDirectory> {
  const ns = env.DIRECTORY as unknown as DurableObjectNamespace<ClusterDirectory>;
  return ns.get(ns.idFromName(c));
}

describe("review: the old master crashes during the directory call", () => {
  it("restarts as a replica of term 2, so no term-1 master leases a replica into a stale strong read", async () => {
    const c = freshCluster("zz-zombie");
    expect((await exec(c, [{ sql: "CREATE TABLE t (k TEXT PRIMARY KEY)" }])).status).toBe(200);
    // Three members: node-0, replica-1 (the candidate), replica-2 (the victim).
    for (const id of ["replica-3", "replica-4"]) {
      expect((await call("DELETE", `/admin/clusters/${c}/replicas/${id}`)).status).toBe(200);
    }
    const p = await patchTunables(c, {
      debug_fault_injection: true,
      rep_timeout_ms: 200,
      durable_lsns: false,
    });
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO t VALUES ('before')" }], "kb")).status).toBe(200);
    await sleep(500);

    // The directory is slow to answer (held for 1500 ms) ...
    const held = runInDurableObject(directory(c), (_i, state) => {
      state.blockConcurrencyWhile(() => sleep(1500)).catch(() => {});
    }).catch(() => {});
    await sleep(20);
    const promote = call("POST", `/admin/clusters/${c}/promote`, {
      body: { replica: "replica-1" },
    }).catch((e) => ({ status: -1, body: { threw: String(e) } }));
    await sleep(1000);
    // replica-2 is unreachable for a moment (so the new master's first probes miss it).
    expect((await call("POST", `/admin/clusters/${c}/replicas/replica-2/stop`)).status).toBe(200);
    // ... and node-0 is busy (input gate closed) when the directory's answer
    // comes back, then it is reset (as by /master/crash) before it reads that answer.
    const crashed = runInDurableObject(
      nodeStub(env, c, "node-0") as never,
      (_i, state: DurableObjectState) => {
        state
          .blockConcurrencyWhile(async () => {
            await sleep(1200);
            state.abort("injected crash after the directory moved");
          })
          .catch(() => {});
      },
    ).catch(() => {});
    const promoted = await promote;
    console.log("promote:", promoted.status, JSON.stringify(promoted.body));
    await held;
    await crashed;
    await sleep(300);
    const record = await directory(c).read();
    console.log("directory:", JSON.stringify({ term: record.term, master: record.master }));
    expect(record).toMatchObject({ term: 2, master: "replica-1" });
    // node-0 asked the directory as it restarted, took term 2 and started as a replica.
    const persisted = await runInDurableObject(
      nodeStub(env, c, "node-0") as never,
      (_i, state: DurableObjectState) => ({
        role: state.storage.kv.get("m:role"),
        term: state.storage.kv.get("m:term") ?? "1",
      }),
    );
    console.log("node-0 persisted:", JSON.stringify(persisted));
    expect(persisted).toEqual({ role: "replica", term: "2" });

    // A front door with a fresh view: takeOver on the member the directory names.
    // A stub breaks when its object resets: a new one for every call.
    const m2 = () => nodeStub(env, c, "replica-1");
    await waitUntil("replica-1 takes over", async () => {
      try {
        await m2().takeOver(c);
        const s = (await m2().status(c)) as unknown as { master: { term: number } };
        return s.master.term === 2;
      } catch {
        return false;
      }
    });
    // The new master's link to replica-2 is cut (a partition between those two).
    await m2().setReplicaDisconnected(c, "replica-2", true);
    // replica-2 is back; only the zombie reaches it.
    await nodeStub(env, c, "replica-2").setStopped(false);

    const strong: QueryRequest = {
      cluster: c,
      sql: "SELECT k FROM t ORDER BY k",
      params: [],
      consistency: "strong",
      minLsn: 0,
    };
    const readAtReplica2 = async () =>
      (await nodeStub(env, c, "replica-2").replicaQuery(
        strong,
        "replica-2",
      )) as unknown as ReplicaQueryOutcome;
    // No master of term 1 is left to lease it: whatever it serves below must hold 'after'.
    // The new master acknowledges a write.
    const write: ExecRequest = {
      cluster: c,
      kind: "exec",
      statements: [{ sql: "INSERT INTO t VALUES ('after')", params: [] }],
      format: "objects",
    };
    const w = (await m2().exec(write)) as unknown as { ok: boolean };
    console.log("write on the new master:", JSON.stringify(w));
    expect(w.ok).toBe(true);
    // A strong read that begins after the acknowledgement.
    const r = await readAtReplica2();
    console.log("strong read at replica-2:", JSON.stringify(r));
    if (r.kind === "rows") {
      const rows = (r.response as unknown as { rows: { k: string }[] }).rows.map((x) => x.k);
      expect(rows).toContain("after");
    }
  });
});
