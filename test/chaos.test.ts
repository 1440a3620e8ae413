/**
 * The randomized fault test, inside workerd through the front door: a seeded,
 * bounded run of test/chaos-workload.ts with every fault on, then the history
 * checker. A failure prints the seed; `npm run chaos -- --seed S` runs the same
 * schedule of decisions against `wrangler dev`.
 */
import { describe, expect, it } from "vitest";
import { CHAOS_MESSAGES, CHAOS_TUNABLES, passed, runChaos, summarize } from "./chaos-workload";
import { call, freshCluster } from "./helpers";

const SEED = 20261129;

describe("chaos, 4 replicas", () => {
  it("with master crashes, replica stops, crashes and partitions, and lost, late, duplicated and reordered messages, no acked write is lost or duplicated and no strong read is stale", async () => {
    const report = await runChaos({
      cluster: freshCluster("chaos"),
      seed: SEED,
      clients: 10,
      maxOps: 1000,
      seconds: 60,
      faultEveryMs: 500,
      masterCrashes: true,
      replicaStops: true,
      replicaCrashes: true,
      partitions: true,
      messages: CHAOS_MESSAGES,
      tunables: CHAOS_TUNABLES,
      convergeMs: 30_000,
      send: async (method, path, body, headers) => {
        const res = await call(method, path, {
          ...(body === undefined ? {} : { body }),
          ...(headers === undefined ? {} : { headers }),
        });
        return { status: res.status, body: res.body };
      },
    });
    const summary = summarize(report).join("\n");
    console.log(summary);
    const c = report.check;
    const findings = { ...c, unrecovered: report.unrecovered };
    expect(passed(report), `${summary}\n${JSON.stringify(findings, null, 1)}`).toBe(true);
    expect(c.lost).toEqual([]);
    expect(c.duplicated).toEqual([]);
    expect(c.staleReads).toEqual([]);
    // The run really was under fire, and really did work.
    expect(c.acked).toBeGreaterThan(100);
    expect(c.failed).toBeGreaterThan(0);
    expect(c.retried).toBeGreaterThan(0);
    for (const kind of [
      "masterCrash",
      "replicaStop",
      "partition",
      "drop",
      "delay",
      "duplicate",
      "reorder",
    ]) {
      expect(report.faults[kind], kind).toBeGreaterThan(0);
    }
    expect((report.faults.replicaCrash ?? 0) + (report.faults.midBatchCrash ?? 0)).toBeGreaterThan(
      0,
    );
  }, 150_000);
});
