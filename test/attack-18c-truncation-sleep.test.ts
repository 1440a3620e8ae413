/**
 * Attack 18c on a replica's truncation in steps (durable-objects/replica/
 * log-keeper.ts, truncationStep): "still truncated to the target eventually".
 *
 * A replica truncates only inside a message's call (LogKeeper.upkeep from
 * ReplicaRole.append), now 256 rows a message when the message brings no
 * records (a heartbeat), where it was 5,000. An idle cluster gets one
 * heartbeat per heartbeat_ms (200 ms): about 1,280 rows a second. But the
 * master goes to sleep (scale to zero, idle_after_ms) as soon as ITS log is
 * truncated and the replicas acked (core/idle.ts awakeBecause: it looks at
 * truncationPending for the master's own log only), and then sends nothing
 * more: a replica whose log still held a backlog keeps it, indefinitely,
 * until the next write wakes the master. With 5,000-row chunks one heartbeat
 * finished a backlog of 3,000 rows; with 256-row steps the replica is left
 * with thousands of rows the master already truncated.
 *
 * NOT introduced by the change: run against the old 5,000-row chunks, the
 * same test left all 3,000 rows (no message reached the replica after the
 * master's truncation before it slept); with 256-row steps it leaves 2,744.
 * The promise "truncated to the target eventually" does not hold once the
 * master scales to zero, and shorter steps make the backlog a heartbeat or
 * two leaves behind larger. Storage only: nothing is lost or kept wrongly.
 *
 * Fixed on both sides: the replica takes the rest of a backlog a step a turn
 * between messages (LogKeeper), and the master sleeps only once every replica
 * answered a message that carried its truncation point (core/idle.ts). The
 * first alone makes this test pass here (one heartbeat reached the replica);
 * the second makes it hold when none does (test/idle-rule.test.ts).
 *
 * Sequence: one replica (replica-2..4 removed, only to make the writes
 * quick); 1,500 commits while log_retain_records keeps them all; then
 * log_retain_records 0 and idle_after_ms 300: the master truncates its log
 * to LSN ~1,500 in one job step and sleeps about a second later. Expected:
 * replica-1's log truncated to the master's point (less its newest record).
 * Before the fix: replica-1 stopped 1,244 rows short here, and stayed so while the
 * master slept.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { nodeObjectName } from "../durable-objects/node-rpc";
import { NodeStore } from "../durable-objects/node-store";
import { idleOf, patchTunables, untilAsleep } from "./helpers";
import { insertMany, oneReplicaCluster } from "./truncation-helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const COMMITS = 1_500;

describe("attack 18c: a replica's truncation steps and scale to zero", () => {
  it("the replica's log reaches the master's truncation point before the master sleeps", async () => {
    const c = await oneReplicaCluster("a18c-trunc");
    await insertMany(c, COMMITS, "x", false);
    const tuned = await patchTunables(c, { log_retain_records: 0, idle_after_ms: 300 });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    await untilAsleep(c, 20_000);
    await sleep(3_000);
    expect((await idleOf(c)).asleep).toBe(true);
    const master = env.NODE.get(env.NODE.idFromName(nodeObjectName(c, "node-0")));
    const replica = env.NODE.get(env.NODE.idFromName(nodeObjectName(c, "replica-1")));
    const masterThrough = await runInDurableObject(master, (_, s) =>
      new NodeStore(s.storage.kv).truncatedThrough(),
    );
    const replicaLog = await runInDurableObject(replica, (_, s) => {
      const store = new NodeStore(s.storage.kv);
      return { through: store.truncatedThrough(), last: store.lastLsn() };
    });
    expect(masterThrough).toBeGreaterThan(COMMITS - 100);
    const target = Math.min(masterThrough, replicaLog.last - 1);
    expect(
      { masterThrough, replica: replicaLog, rowsLeftBehind: target - replicaLog.through },
      "the replica's log followed the master's truncation point before the cluster went quiet",
    ).toMatchObject({ rowsLeftBehind: 0 });
  }, 180_000);
});
