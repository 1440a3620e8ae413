/**
 * How a chaos run (test/chaos-workload.ts) is judged and printed, for the CI
 * test and `npm run chaos` alike.
 */
import { describeReport } from "../core/linearizability";
import type { ChaosReport } from "./chaos-workload";

/** The numbers a run is judged by, one line each, then a verdict line per register key. */
export function summarize(report: ChaosReport): string[] {
  const c = report.check;
  const r = report.registers.counts;
  return [
    `seed ${report.seed}, ${report.seconds}s`,
    `ops ${c.ops} (writes ${c.writes}, reads ${c.reads}), acked ${c.acked}, retried ${c.retried}, failed ${c.failed}, unknown ${c.unknown}`,
    `register ops: strong reads ${r.reads} (refused by the pinned node ${r.readsRefused}), writes ${r.writes}, cas applied ${r.cas}, cas missed ${r.casMissed}, refused ${r.refused}, unknown ${r.unknown}`,
    `faults injected: ${Object.entries(report.faults)
      .map(([kind, n]) => `${kind} ${n}`)
      .join(", ")}`,
    `catch-up: snapshots ${report.catchUp.snapshots}, log batches pulled ${report.catchUp.pullBatches}`,
    `lost ${c.lost.length}, duplicated ${c.duplicated.length}, stale strong reads ${c.staleReads.length}, failed but present ${c.failedPresent.length}, diverged ${c.diverged.length}, unexpected ${c.unexpected.length}, unrecovered replicas ${report.unrecovered.length}`,
    ...describeReport(report.linearizability),
  ];
}

/** Every register key that is not proven linearizable, with the seed and the checker's words. */
export function linearizabilityFindings(report: ChaosReport): string[] {
  return report.linearizability.keys
    .filter((k) => k.linearizable !== true)
    .map(
      (k) =>
        `seed ${report.seed}, key ${k.key}: linearizable ${String(k.linearizable)}\n${k.explanation ?? k.reason ?? ""}`,
    );
}

export function passed(report: ChaosReport): boolean {
  return (
    report.check.valid &&
    report.unrecovered.length === 0 &&
    report.linearizability.linearizable === true
  );
}
