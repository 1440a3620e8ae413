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

describe("calls that overlap on a slow link (relay_call_gap_ms)", () => {
  const D = 400;
  /** Latency of a write sent 10 ms after another, both over a link of round trip D. */
  async function secondWriteMs(c: string): Promise<number> {
    const first = exec(c, [{ sql: "INSERT INTO t (v) VALUES ('first')" }]);
    await new Promise((r) => setTimeout(r, 10));
    const started = Date.now();
    const second = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('second')" }]);
    const ms = Date.now() - started;
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect((await first).status).toBe(200);
    return ms;
  }

  async function setup(name: string, patch: Record<string, unknown>): Promise<string> {
    const c = freshCluster(name);
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status,
    ).toBe(200);
    await converged(c);
    expect((await patchTunables(c, { debug_link_delay_ms: D, ...patch })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 3 * D));
    return c;
  }

  it("with one call in flight, a record committed while a call is out waits for it: about two round trips", async () => {
    const c = await setup("gap-one", { relay_calls_in_flight: 1 });
    expect(await secondWriteMs(c)).toBeGreaterThanOrEqual(1.5 * D);
  }, 60_000);

  it("with calls allowed to overlap after a gap, it goes one gap after the call before: about one round trip", async () => {
    const c = await setup("gap-four", { relay_calls_in_flight: 4, relay_call_gap_ms: 40 });
    const ms = await secondWriteMs(c);
    expect(ms).toBeGreaterThanOrEqual(D);
    expect(ms).toBeLessThan(1.5 * D);
    await sameEverywhere(c, "SELECT id, v FROM t ORDER BY id");
  }, 60_000);

  it("a further call waits until the newest one has been out the gap", async () => {
    const c = await setup("gap-long", { relay_calls_in_flight: 4, relay_call_gap_ms: 200 });
    // Sent 10 ms after the first call went, it leaves about 190 ms later.
    expect(await secondWriteMs(c)).toBeGreaterThanOrEqual(D + 150);
  }, 60_000);
});
