/** Summary statistics shared by the load drivers (Node and in-runtime alike). */

/** The p-th percentile of an ascending array (nearest rank); 0 for no samples. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** What a load run reports, whichever driver ran it. */
export interface LoadSummary<D extends string> {
  driver: D;
  clients: number;
  /** Measured seconds (after the warm-up). */
  seconds: number;
  inserts: number;
  insertsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  firstError: string | null;
  /** Inserts acked in each second since the load started, warm-up included (in-runtime driver). */
  perSecond?: number[];
}

/** Sorts `latencies` (ms of the measured inserts) and summarizes a run of `measuredSeconds`. */
export function summarizeLoad<D extends string>(
  driver: D,
  clients: number,
  measuredSeconds: number,
  latencies: number[],
  errors: readonly string[],
): LoadSummary<D> {
  latencies.sort((a, b) => a - b);
  return {
    driver,
    clients,
    seconds: Math.round(measuredSeconds * 10) / 10,
    inserts: latencies.length,
    insertsPerSecond: Math.round(latencies.length / measuredSeconds),
    // A tenth of a millisecond: the latency targets are within 5 ms of the delay.
    p50Ms: Math.round(percentile(latencies, 50) * 10) / 10,
    p99Ms: Math.round(percentile(latencies, 99) * 10) / 10,
    errors: errors.length,
    firstError: errors[0] ?? null,
  };
}
