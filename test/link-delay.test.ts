/**
 * debug_link_delay_ms makes every relay call a link of that round trip: a
 * write acknowledged under full sync waits at least one round trip (its
 * record out and the ack back), and the replicas do what they would: they
 * stay coherent, with the master's rows.
 */
import { describe, expect, it } from "vitest";
import { exec, freshCluster, patchTunables, status } from "./helpers";
import { converged, sameEverywhere } from "./node-images";

const LINK_MS = 240;

describe("a delayed link (debug_link_delay_ms)", () => {
  it("a write waits one round trip of the link, and every replica stays coherent with the master's rows", async () => {
    const c = freshCluster("link-delay");
    const ddl = await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }]);
    expect(ddl.status, JSON.stringify(ddl.body)).toBe(200);
    const fast: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('fast')" }])).status).toBe(200);
      fast.push(Date.now() - started);
    }
    expect((await patchTunables(c, { debug_link_delay_ms: LINK_MS })).status).toBe(200);
    // The patch reaches the relays at once; let a heartbeat cross the slow link.
    await new Promise((r) => setTimeout(r, 2 * LINK_MS));
    const slow: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      const res = await exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`slow ${i}`] }]);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      slow.push(Date.now() - started);
    }
    for (const ms of slow) expect(ms, `slow writes ${slow}`).toBeGreaterThanOrEqual(LINK_MS);
    // Without the delay a write is answered well inside one such round trip.
    expect(Math.min(...fast), `fast writes ${fast}`).toBeLessThan(LINK_MS);
    const s = await status(c);
    for (const r of s.body.replicas) {
      expect(r.state, r.id).toBe("coherent");
    }
    expect((await patchTunables(c, { debug_link_delay_ms: 0 })).status).toBe(200);
    await converged(c);
    await sameEverywhere(c, "SELECT id, v FROM t ORDER BY id");
  }, 60_000);
});
