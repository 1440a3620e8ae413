/**
 * SURVIVED (attack 18d), on 5023e9b and at cd6476e: a DELETE that reaches a
 * replica while its truncation backlog runs between messages
 * (durable-objects/replica/log-keeper.ts: a setTimeout(0) step a turn) leaves
 * nothing in the replica's object.
 *
 * The worry: destroyNow (node-host.ts) awaits the directory, deleteAlarm() and
 * deleteAll(), then storage.sync() and ctx.abort(); a step queued before and
 * run after deleteAll() still holds the old truncation point in memory, and
 * NodeStore.truncateLog would write m:truncated_through (and _term, _offset)
 * into the emptied object, where the name's next cluster would find a
 * replica whose empty log "ends" at the old LSN (lastLsn falls back to it):
 * diverged at its first message, rebuilt from a snapshot. Instrumented on
 * 5023e9b, steps do run during the destroy's awaits, but none between
 * deleteAll() and the abort, and nothing is left; cd6476e now also stops the
 * steps (ReplicaRole.close) before deleteAll().
 *
 * Sequence: one replica (replica-2..4 removed, so the writes go quickly);
 * heartbeat_ms 30 s (leases 60 s) so that no message carries the truncation
 * point on its own; 6,000 keyed commits of 4 KB kept by log_retain_records;
 * then log_retain_records 0 (the master truncates to ~6,000; replica-1 not
 * told yet). One more write carries the point: replica-1 takes one step in
 * that call and queues ~23 more (about 210 ms). DELETE (deleteCluster) runs
 * with replica-1's destroy held until the test has seen replica-1
 * mid-backlog, then let through. Expected and found: replica-1's object holds
 * only what a fresh object's constructor writes.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { nodeObjectName } from "../durable-objects/node-rpc";
import { NodeStore } from "../durable-objects/node-store";
import { deleteCluster } from "../workers/cluster-delete";
import { envHolding } from "./delete-helpers";
import { exec, patchTunables, status, waitUntil } from "./helpers";
import { insertMany, oneReplicaCluster } from "./truncation-helpers";

const COMMITS = 6_000;
const BIG = "x".repeat(4_000);
/** What the constructor of the fresh object runInDurableObject starts writes. */
const FRESH = new Set(["m:log_results_unindexed", "m:migration", "m:role"]);

const nodeStub = (c: string, member: string) => {
  const ns = env.NODE as unknown as DurableObjectNamespace;
  return ns.get(ns.idFromName(nodeObjectName(c, member)));
};

describe("attack 18d: a truncation step queued on a replica outlives DELETE", () => {
  it("DELETE leaves the replica's object empty", async () => {
    const c = await oneReplicaCluster("a18d-delchain");
    const tuned = await patchTunables(c, {
      coherency_lease_ms: 60_000,
      heartbeat_ms: 30_000,
      log_retain_records: 100_000,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    await insertMany(c, COMMITS, BIG, true);
    const lsn = (await status(c)).body.master.lsn;
    const retain = await patchTunables(c, { log_retain_records: 0 });
    expect(retain.status, JSON.stringify(retain.body)).toBe(200);
    await waitUntil(
      "the master truncated its log",
      async () =>
        ((await status(c)).body.master as unknown as { truncatedThrough: number })
          .truncatedThrough >=
        lsn - 1,
      10_000,
      50,
    );
    const replica = nodeStub(c, "replica-1");
    const before = await runInDurableObject(replica, (_, s) =>
      new NodeStore(s.storage.kv).truncatedThrough(),
    );
    // No message has told replica-1 yet: its backlog starts with the next one.
    expect(before).toBe(0);
    const trigger = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('trigger')" }]);
    expect(trigger.status).toBe(200);
    let open = () => {};
    const gate = new Promise<void>((r) => {
      open = r;
    });
    let reached = () => {};
    const midway = new Promise<void>((r) => {
      reached = r;
    });
    const deletion = deleteCluster(envHolding(`${c}:replica-1`, "destroy", gate, reached), c);
    await midway;
    const at = await runInDurableObject(replica, (_, s) =>
      new NodeStore(s.storage.kv).truncatedThrough(),
    );
    open();
    await deletion;
    const left = await runInDurableObject(nodeStub(c, "replica-1"), (_, s) => ({
      truncatedThrough: s.storage.kv.get<string>("m:truncated_through") ?? null,
      keys: [...s.storage.kv.list()].map(([k]) => k),
    }));
    // The DELETE reached replica-1 while its backlog was under way.
    expect(at, "replica-1 was mid-backlog when its destroy came").toBeGreaterThan(0);
    expect(at).toBeLessThan(lsn - 2);
    expect(
      {
        truncatedThrough: left.truncatedThrough,
        leftovers: left.keys.filter((k) => !FRESH.has(k)),
      },
      "DELETE emptied replica-1: nothing of the old cluster's log is left in its object",
    ).toEqual({ truncatedThrough: null, leftovers: [] });
  }, 300_000);
});
