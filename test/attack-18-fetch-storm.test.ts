/**
 * Attack 18 (held-ack fetch, 6287d58): a fetch for a held ack now waits only
 * until the replica's *earliest* held item is due (DeferredAcks.holdFor). But
 * every message with debug_ack_delay_ms > 0 defers an item, heartbeats
 * included, and those heartbeats' items sit in the due queue ahead of the
 * batch's own ack. Each fetch therefore returns at the next heartbeat's item,
 * without the ack the master asked for, and the master sends another: one
 * call per heartbeat of the last D instead of one per batch.
 *
 * Promise broken: "no replica ... loops sending fetches" / one call per batch
 * (docs/architecture.md, "Relays").
 */
import { describe, expect, it } from "vitest";
import { exec, freshCluster, patchTunables, status } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Row {
  id: string;
  calls: number;
  heartbeats: number;
  commitPointNotices: number;
  ackCalls: number;
  ackedLsn: number;
}

const rows = async (c: string) => (await status(c)).body.replicas as unknown as Row[];

describe("attack 18: fetches for one held ack", () => {
  it("one commit under D = 1000 with heartbeats every 20 ms costs a handful of calls, not one per heartbeat", async () => {
    const c = freshCluster("a18-storm");
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status,
    ).toBe(200);
    const res = await patchTunables(c, { debug_ack_delay_ms: 1000, heartbeat_ms: 20 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // Idle with heartbeats flowing: each one defers an (empty) item for D.
    await sleep(1500);
    const before = await rows(c);
    const at = Date.now();
    const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('x')" }]);
    const took = Date.now() - at;
    expect(w.status).toBe(200);
    const after = await rows(c);
    const extra = after.map((r) => {
      const b = before.find((x) => x.id === r.id) as Row;
      return {
        id: r.id,
        nonHeartbeatCalls:
          r.calls -
          b.calls -
          (r.heartbeats - b.heartbeats) -
          (r.commitPointNotices - b.commitPointNotices),
        heartbeats: r.heartbeats - b.heartbeats,
        ackCalls: r.ackCalls - b.ackCalls,
      };
    });
    console.log("commit took", took, JSON.stringify(extra));
    expect(took).toBeGreaterThanOrEqual(1000);
    // One batch, and a fetch or two for its ack.
    for (const e of extra) expect(e.nonHeartbeatCalls, JSON.stringify(e)).toBeLessThanOrEqual(4);
  }, 30_000);
});
