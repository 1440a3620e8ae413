/**
 * The randomized fault test, inside workerd through the front door: seeded,
 * bounded runs of test/chaos-workload.ts with every fault on, then the history
 * checker. A failure prints the seed; `npm run chaos -- --seed S` runs the same
 * schedule of decisions against `wrangler dev`.
 */
import { describe, expect, it } from "vitest";
import {
  CHAOS_MESSAGES,
  CHAOS_TUNABLES,
  type ChaosReport,
  passed,
  runChaos,
  summarize,
} from "./chaos-workload";
import { call, freshCluster } from "./helpers";

async function chaos(seed: number, maxOps: number, tunables: Record<string, unknown> = {}) {
  return runChaos({
    cluster: freshCluster("chaos"),
    seed,
    clients: 10,
    maxOps,
    seconds: 60,
    faultEveryMs: 500,
    masterCrashes: true,
    replicaStops: true,
    replicaCrashes: true,
    partitions: true,
    messages: CHAOS_MESSAGES,
    tunables: { ...CHAOS_TUNABLES, ...tunables },
    convergeMs: 30_000,
    send: async (method, path, body, headers) => {
      const res = await call(method, path, {
        ...(body === undefined ? {} : { body }),
        ...(headers === undefined ? {} : { headers }),
      });
      return { status: res.status, body: res.body };
    },
  });
}

function expectNothingBroken(report: ChaosReport): void {
  const summary = summarize(report).join("\n");
  console.log(summary);
  const c = report.check;
  const findings = { ...c, unrecovered: report.unrecovered };
  expect(passed(report), `${summary}\n${JSON.stringify(findings, null, 1)}`).toBe(true);
  expect(c.lost).toEqual([]);
  expect(c.duplicated).toEqual([]);
  expect(c.staleReads).toEqual([]);
  expect(report.unrecovered).toEqual([]);
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
  expect((report.faults.replicaCrash ?? 0) + (report.faults.midBatchCrash ?? 0)).toBeGreaterThan(0);
}

describe("chaos, 4 replicas", () => {
  it("with master crashes, replica stops, crashes and partitions, and lost, late, duplicated and reordered messages, no acked write is lost or duplicated and no strong read is stale", async () => {
    expectNothingBroken(await chaos(20261129, 1000));
  }, 150_000);

  it("the same with deferred acks (debug_ack_delay_ms), and every replica recovers once the faults are healed", async () => {
    expectNothingBroken(await chaos(41, 600, { debug_ack_delay_ms: 30 }));
  }, 150_000);
});
