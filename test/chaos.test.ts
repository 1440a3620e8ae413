/**
 * The randomized fault test, inside workerd through the front door: seeded,
 * bounded runs of test/chaos-workload.ts with every fault on, then the history
 * checker and the linearizability checker. A failure prints the seed;
 * `npm run chaos -- --seed S` runs the same schedule of decisions against
 * `wrangler dev`.
 */
import { describe, expect, it } from "vitest";
import { checkLinearizability } from "../core/linearizability";
import { operationsFromHistory } from "../core/register-history";
import { REGISTER_KEYS } from "./chaos-registers";
import { linearizabilityFindings, passed, summarize } from "./chaos-report";
import {
  CHAOS_MESSAGES,
  CHAOS_TUNABLES,
  type ChaosOptions,
  type ChaosReport,
  runChaos,
} from "./chaos-workload";
import { exports } from "cloudflare:workers";
import { ADMIN, DATA, freshCluster } from "./helpers";

async function chaos(
  seed: number,
  maxOps: number,
  tunables: Record<string, unknown> = {},
  overrides: Partial<ChaosOptions> = {},
) {
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
    promotions: true,
    masterLosses: true,
    messages: CHAOS_MESSAGES,
    tunables: { ...CHAOS_TUNABLES, ...tunables },
    convergeMs: 30_000,
    // The typed client, through the Worker's own fetch handler.
    endpoint: {
      url: "http://cluster.test",
      token: DATA,
      adminToken: ADMIN,
      fetch: (input, init) => exports.default.fetch(new Request(input, init)),
    },
    log: (line) => {
      if (line.startsWith("promotion") || line.startsWith("automatic")) console.log(line);
    },
    ...overrides,
  });
}

function expectNothingBroken(report: ChaosReport): void {
  const summary = summarize(report).join("\n");
  console.log(summary);
  const c = report.check;
  const findings = { ...c, unrecovered: report.unrecovered };
  const violations = linearizabilityFindings(report);
  expect(
    passed(report),
    `${summary}\n${JSON.stringify(findings, null, 1)}\n${violations.join("\n")}`,
  ).toBe(true);
  expect(c.lost).toEqual([]);
  expect(c.duplicated).toEqual([]);
  expect(c.staleReads).toEqual([]);
  expect(report.unrecovered).toEqual([]);
  expect(violations, violations.join("\n")).toEqual([]);
  // The run really was under fire, and really did work.
  expect(c.acked).toBeGreaterThan(100);
  expect(c.failed).toBeGreaterThan(0);
  expect(c.retried).toBeGreaterThan(0);
  // The register keys were really exercised and judged.
  expect(report.linearizability.keys).toHaveLength(REGISTER_KEYS.length);
  expect(report.linearizability.operations).toBeGreaterThan(100);
  for (const key of report.linearizability.keys) expect(key.checked, key.key).toBeGreaterThan(10);
  for (const kind of [
    "masterCrash",
    "replicaStop",
    "partition",
    "promotion",
    "masterLoss",
    "autoPromotion",
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
  it("with master crashes, promotions, lost masters, replica stops, crashes and partitions, and lost, late, duplicated and reordered messages, no acked write is lost or duplicated, no strong read is stale and every register key is linearizable", async () => {
    expectNothingBroken(await chaos(20261129, 1000));
  }, 150_000);

  it("feeds every register operation into the linearizability checker (a run without faults)", async () => {
    const report = await chaos(
      7,
      150,
      {},
      {
        clients: 4,
        masterCrashes: false,
        replicaStops: false,
        replicaCrashes: false,
        partitions: false,
        promotions: false,
        masterLosses: false,
        messages: { drop: 0, delay: 0, delayMs: 0, duplicate: 0, reorder: 0 },
      },
    );
    const { counts, events } = report.registers;
    expect(counts.reads).toBeGreaterThan(0);
    expect(counts.writes).toBeGreaterThan(0);
    expect(counts.cas + counts.casMissed).toBeGreaterThan(0);
    // Every completed operation reached the checker, on its key.
    const ops = operationsFromHistory(events);
    expect(ops).toHaveLength(Object.values(counts).reduce((a, b) => a + b, 0));
    expect(report.linearizability.operations).toBe(ops.length);
    expect(report.linearizability.keys.reduce((n, k) => n + k.operations, 0)).toBe(ops.length);
    // Strong reads were pinned to every member in turn, and to whichever is master.
    const asked = new Set(
      events.filter((e) => e.type === "invoke" && e.f === "read").map((e) => e.node),
    );
    expect(asked.size).toBe(6);
    // A read that returns a value no one wrote makes its key fail: the verdict comes from these events.
    const target = events.find((e) => e.type === "ok" && e.f === "read");
    expect(target).toBeDefined();
    const tampered = events.map((e) => (e === target ? { ...e, value: -1 } : e));
    const verdict = checkLinearizability(operationsFromHistory(tampered));
    expect(verdict.keys.find((k) => k.key === target?.key)?.linearizable).toBe(false);
  }, 60_000);

  it("the same with deferred acks (debug_ack_delay_ms), and every replica recovers once the faults are healed", async () => {
    expectNothingBroken(await chaos(41, 600, { debug_ack_delay_ms: 30 }));
  }, 150_000);
});
