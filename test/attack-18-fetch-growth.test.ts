/**
 * Attack 18 (held-ack fetch, 6287d58), default heartbeat_ms: sequential
 * commits under debug_ack_delay_ms. A fetch returns at the replica's earliest
 * held item (DeferredAcks.holdFor), and every message of the last D left one
 * there (heartbeats, and the previous commit's fetches themselves). Each
 * early return brings no ack, so the master fetches again; the fetches of one
 * commit then sit in front of the next commit's ack, and the count of calls
 * per commit feeds on itself.
 *
 * Promise broken: no replica loops sending fetches (one call per batch plus
 * a fetch for its ack).
 */
import { describe, expect, it } from "vitest";
import { exec, freshCluster, patchTunables, status } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Row {
  id: string;
  calls: number;
  heartbeats: number;
  commitPointNotices: number;
}
const callsOf = async (c: string) => {
  const r = (await status(c)).body.replicas as unknown as Row[];
  const one = r.find((x) => x.id === "replica-1") as Row;
  return {
    fetchesAndBatches: one.calls - one.heartbeats - one.commitPointNotices,
    calls: one.calls,
  };
};

describe("attack 18: fetches per commit in a sequence of held commits", () => {
  it("stays bounded with the default heartbeat (D = 500)", async () => {
    const c = freshCluster("a18-growth");
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status,
    ).toBe(200);
    const res = await patchTunables(c, { debug_ack_delay_ms: 500 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await sleep(1200);
    const perCommit: number[] = [];
    const totals: number[] = [];
    for (let i = 0; i < 8; i++) {
      const b = await callsOf(c);
      const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`x${i}`] }]);
      expect(w.status).toBe(200);
      const a = await callsOf(c);
      perCommit.push(a.fetchesAndBatches - b.fetchesAndBatches);
      totals.push(a.calls - b.calls);
    }
    console.log(
      "non-heartbeat calls per commit",
      perCommit.join(","),
      "all calls",
      totals.join(","),
    );
    // One batch and about one fetch each.
    expect(Math.max(...perCommit)).toBeLessThanOrEqual(4);
  }, 30_000);
});
