/**
 * Attack on relay_calls_in_flight = 1 with the commit-point notice sent as a
 * heartbeat: a slow replica, held acks, idle gaps and strong reads on
 * replicas interleaved with writes. No commit may stall, strong reads on a
 * fast replica must not wait for a slow one, no replica marked incoherent.
 */
import { describe, expect, it } from "vitest";
import { call, exec, freshCluster, patchTunables, query, status } from "./helpers";
import { sameEverywhere } from "./node-images";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function setup(prefix: string, tunables: Record<string, unknown>) {
  const c = freshCluster(prefix);
  expect((await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status).toBe(
    200,
  );
  const res = await patchTunables(c, tunables);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const t = (await call("GET", `/admin/clusters/${c}/tunables`)).body as {
    relay_calls_in_flight: { value: number };
  };
  expect(t.relay_calls_in_flight.value).toBe(1);
  return c;
}

describe("attack 12c: one relay call in flight", () => {
  it("a slow replica (150 ms per message), writes with idle gaps and strong reads on every replica", async () => {
    const c = await setup("a12c-slow", { debug_fault_injection: true, slow_replica_factor: 0 });
    expect(
      (await call("POST", `/admin/clusters/${c}/replicas/replica-2/delay`, { body: { ms: 150 } }))
        .status,
    ).toBe(200);
    const commits: number[] = [];
    const reads: Record<string, number[]> = {};
    for (let i = 0; i < 12; i++) {
      const started = Date.now();
      const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`s${i}`] }]);
      expect(w.status, JSON.stringify(w.body)).toBe(200);
      commits.push(Date.now() - started);
      for (const r of ["replica-1", "replica-2", "replica-3"]) {
        const at = Date.now();
        const q = await query(c, "SELECT COUNT(*) AS n FROM t", { replica: r });
        expect(q.status, JSON.stringify(q.body)).toBe(200);
        expect(q.body.rows).toEqual([{ n: i + 1 }]);
        const took = reads[r] ?? [];
        took.push(Date.now() - at);
        reads[r] = took;
      }
      if (i % 4 === 3) await sleep(700); // idle gap past a heartbeat period
    }
    console.log("commits ms", commits.join(","), "reads", JSON.stringify(reads));
    expect(Math.max(...commits)).toBeLessThan(1500);
    // A fast replica's strong read must not be held by the slow one's calls.
    expect(Math.max(...(reads["replica-1"] ?? []))).toBeLessThan(600);
    const s = await status(c);
    expect(s.body.replicas.map((r) => r.incoherentReason)).toEqual([null, null, null, null]);
    expect(
      (await call("POST", `/admin/clusters/${c}/replicas/replica-2/delay`, { body: { ms: 0 } }))
        .status,
    ).toBe(200);
    await sameEverywhere(c, "SELECT * FROM t ORDER BY id");
  }, 60_000);

  it("held acks (debug_ack_delay_ms 150) with a burst, an idle gap, then single writes and strong reads", async () => {
    const c = await setup("a12c-held", { debug_ack_delay_ms: 150 });
    await sleep(400);
    const burst = await Promise.all(
      Array.from({ length: 30 }, (_, i) => {
        const at = Date.now();
        return exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`b${i}`] }]).then((r) => ({
          status: r.status,
          ms: Date.now() - at,
        }));
      }),
    );
    expect(burst.map((b) => b.status)).toEqual(Array(30).fill(200));
    const burstMax = Math.max(...burst.map((b) => b.ms));
    await sleep(1200);
    const singles: number[] = [];
    const reads: number[] = [];
    for (let i = 0; i < 8; i++) {
      const at = Date.now();
      const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`x${i}`] }]);
      expect(w.status, JSON.stringify(w.body)).toBe(200);
      singles.push(Date.now() - at);
      const r0 = Date.now();
      const q = await query(c, "SELECT COUNT(*) AS n FROM t", {
        replica: `replica-${(i % 4) + 1}`,
      });
      expect(q.status, JSON.stringify(q.body)).toBe(200);
      expect(q.body.rows).toEqual([{ n: 31 + i }]);
      reads.push(Date.now() - r0);
      if (i === 3) await sleep(900);
    }
    console.log("burst max", burstMax, "singles", singles.join(","), "reads", reads.join(","));
    expect(burstMax).toBeLessThan(3000);
    expect(Math.max(...singles)).toBeLessThan(1000);
    expect(Math.max(...reads)).toBeLessThan(600);
    const s = await status(c);
    expect(
      s.body.replicas.every((r) => r.state === "coherent"),
      JSON.stringify(s.body.replicas),
    ).toBe(true);
    await sameEverywhere(c, "SELECT * FROM t ORDER BY id");
  }, 60_000);
});
