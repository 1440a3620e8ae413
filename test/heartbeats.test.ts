/**
 * Heartbeats never take the place of records: a replica slower per call than
 * several heartbeat periods still gets every record, at most one heartbeat is
 * in flight to it at a time, and it stays in the wait sets.
 */
import { describe, expect, it } from "vitest";
import { call, exec, freshCluster, patchTunables, status } from "./helpers";

interface Row {
  id: string;
  state: string;
  ackedLsn: number;
  calls: number;
  heartbeats: number;
  ackRttCount: number;
}

const replica = async (c: string, id: string) =>
  ((await status(c)).body.replicas as unknown as Row[]).find((r) => r.id === id) as Row;

describe("heartbeats to a slow replica, 4 replicas", () => {
  it.each([4, 8])(
    "a replica taking %i x heartbeat_ms per call keeps getting records and stays coherent",
    async (times) => {
      const heartbeatMs = 50;
      const perCallMs = times * heartbeatMs;
      const c = freshCluster("hbslow");
      expect(
        (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status,
      ).toBe(200);
      const tuned = await patchTunables(c, {
        heartbeat_ms: heartbeatMs,
        rep_timeout_ms: 1_500,
        coherency_lease_ms: 500,
        slow_replica_factor: 0,
        debug_fault_injection: true,
      });
      expect(tuned.status).toBe(200);
      const slow = await call("POST", `/admin/clusters/${c}/replicas/replica-2/delay`, {
        body: { ms: perCallMs },
      });
      expect(slow.status).toBe(200);
      // Let the heartbeats to the slow replica pile up as they would.
      await new Promise((r) => setTimeout(r, 1_000));
      const before = await replica(c, "replica-2");
      const started = Date.now();
      const writer = async (n: number) => {
        for (let i = 0; Date.now() - started < 3_000; i++) {
          const w = await exec(c, [
            { sql: "INSERT INTO t (v) VALUES (?)", params: [`c${n}-${i}`] },
          ]);
          expect(w.status, JSON.stringify(w.body)).toBe(200);
        }
      };
      await Promise.all([writer(0), writer(1), writer(2), writer(3)]);
      const elapsed = Date.now() - started;
      const after = await replica(c, "replica-2");
      const s = await status(c);
      // It stayed in the wait sets and has every write.
      expect(after.state).toBe("coherent");
      expect(after.ackedLsn).toBe(s.body.master.lsn);
      const heartbeats = after.heartbeats - before.heartbeats;
      const batches = after.ackRttCount - before.ackRttCount;
      const calls = after.calls - before.calls;
      const summary = JSON.stringify({ elapsed, calls, heartbeats, batches });
      // Records flowed as fast as the replica takes calls: heartbeats took no
      // batch's place (with one batch call in flight, one batch per call time).
      expect(batches, summary).toBeGreaterThanOrEqual(Math.floor(elapsed / perCallMs) - 1);
      expect(calls - batches, summary).toBeLessThanOrEqual(heartbeats + 1);
      // At most one heartbeat is in flight, and each takes the replica's delay.
      expect(heartbeats, summary).toBeLessThanOrEqual(Math.ceil(elapsed / perCallMs) + 1);
    },
  );
});
