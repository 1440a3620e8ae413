/**
 * REAL BUG in 5023e9b, fixed by cd6476e (17:26, while this attack ran): this
 * test fails on 5023e9b with 4,464 rows left behind on replica-1 while the
 * master sleeps, and passes at cd6476e, whose idle rule waits for each
 * replica's own truncation point (its answers' logTruncatedThrough) rather
 * than for its having heard the master's. Kept as the regression test.
 *
 * Attack 18d on "a replica's log reaches the master's truncation point even
 * when the master goes to sleep" (durable-objects/replica/log-keeper.ts,
 * core/idle.ts), as 5023e9b had it:
 *
 * The master sleeps once every replica's relay has ANSWERED a message that
 * carried the truncation point (relay heardTruncatedThrough), not once the
 * replica has truncated to it. The replica keeps the target only in memory
 * (LogKeeper.target, 0 at start) and takes the backlog a setTimeout(0) step at
 * a time after it answered. A replica that restarts before its backlog is
 * done (a crash, a deploy, an eviction) forgets the target; its next message
 * would bring it back, but the master has heard what it needed and sends
 * none: asleep, it leaves the replica's log untruncated until the next write
 * wakes it, the very case the change set out to close. (The commit says
 * "nothing lost on restart mid-backlog": nothing is lost, and nothing is
 * truncated either.)
 *
 * Sequence: one replica (replica-2..4 removed); heartbeat_ms 2 s (the master
 * checks whether it may sleep every second and sends a heartbeat every other
 * check); N keyed commits kept by log_retain_records; then
 * log_retain_records 0 and idle_after_ms 300: the master truncates its log to
 * ~N within a second, and its next heartbeat carries the point to replica-1,
 * which answers it with one 256-row step and queues the rest (~N/256 steps).
 * The test watches replica-1's truncation point and crashes replica-1 through
 * the fault route the moment the first step shows (a deploy or a crash does
 * the same). The master sleeps at its next check (replica-1 "heard").
 * Expected: replica-1's log truncated to the master's point, less its newest
 * record. On 5023e9b: 4,464 of ~6,000 rows left behind while the master
 * sleeps, for as long as nothing wakes it. At cd6476e the master stays awake
 * ("replica-1 has truncated its log through LSN 0 of 6000"), its next
 * heartbeat restarts the replica's steps, and it sleeps once they are done.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { nodeObjectName } from "../durable-objects/node-rpc";
import { NodeStore } from "../durable-objects/node-store";
import { call, idleOf, patchTunables, status, untilAsleep, waitUntil } from "./helpers";
import { insertMany, oneReplicaCluster } from "./truncation-helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const COMMITS = 6_000;
const BIG = "x".repeat(4_000);

const nodeStub = (c: string, member: string) => {
  const ns = env.NODE as unknown as DurableObjectNamespace;
  return ns.get(ns.idFromName(nodeObjectName(c, member)));
};

describe("attack 18d: a replica restarted mid-backlog while the master sleeps", () => {
  it("the replica's log still reaches the master's truncation point", async () => {
    const c = await oneReplicaCluster("a18d-crash");
    const tuned = await patchTunables(c, {
      debug_fault_injection: true,
      coherency_lease_ms: 5_000,
      heartbeat_ms: 2_000,
      log_retain_records: 100_000,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    await insertMany(c, COMMITS, BIG, true);
    const lsn = (await status(c)).body.master.lsn;
    const retain = await patchTunables(c, { log_retain_records: 0, idle_after_ms: 300 });
    expect(retain.status, JSON.stringify(retain.body)).toBe(200);
    // The next heartbeat carries the point: replica-1 answers it with one
    // 256-row step and queues the rest. It is crashed the moment the first
    // step shows (the crash route does not touch the master: it stays idle).
    const replica = nodeStub(c, "replica-1");
    let seenAt = 0;
    await waitUntil(
      "replica-1 began its backlog",
      async () => {
        seenAt = await runInDurableObject(replica, (_, s) =>
          new NodeStore(s.storage.kv).truncatedThrough(),
        );
        return seenAt > 0;
      },
      10_000,
      0,
    );
    const crashed = await call("POST", `/admin/clusters/${c}/replicas/replica-1/crash`);
    expect(crashed.status, JSON.stringify(crashed.body)).toBe(202);
    await untilAsleep(c, 30_000);
    await sleep(2_000);
    expect((await idleOf(c)).asleep).toBe(true);
    const masterThrough = ((await status(c)).body.master as unknown as { truncatedThrough: number })
      .truncatedThrough;
    const replicaLog = await runInDurableObject(nodeStub(c, "replica-1"), (_, s) => {
      const store = new NodeStore(s.storage.kv);
      return { through: store.truncatedThrough(), last: store.lastLsn() };
    });
    const target = Math.min(masterThrough, replicaLog.last - 1);
    expect(
      {
        lsnBefore: lsn,
        masterThrough,
        seenAt,
        replica: replicaLog,
        rowsLeftBehind: target - replicaLog.through,
      },
      "replica-1's log followed the master's truncation point while the master slept",
    ).toMatchObject({ rowsLeftBehind: 0 });
  }, 300_000);
});
