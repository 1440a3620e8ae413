/**
 * The slow-replica rule (Comdb2's): among coherent replicas, if the worst
 * average ack time exceeds factor x the second-worst plus a 2 ms margin, the
 * worst is slow and is marked incoherent. At most 40% of the replicas may be
 * marked slow at once, so the rule can never empty the wait sets. A factor of
 * 0 turns it off; a replica needs enough samples before it can be judged.
 */
export interface AckTiming {
  id: string;
  avgAckMs: number;
  samples: number;
}

export const SLOW_MARGIN_MS = 2;
export const SLOW_MAX_FRACTION = 0.4;
export const SLOW_MIN_SAMPLES = 20;

export function findSlowReplica(
  coherent: readonly AckTiming[],
  factor: number,
  alreadySlow: number,
  total: number,
): string | null {
  if (factor <= 0) return null;
  if (alreadySlow + 1 > Math.floor(total * SLOW_MAX_FRACTION)) return null;
  const judged = coherent.filter((r) => r.samples >= SLOW_MIN_SAMPLES);
  if (judged.length < 2) return null;
  const sorted = [...judged].sort((a, b) => b.avgAckMs - a.avgAckMs);
  const worst = sorted[0];
  const second = sorted[1];
  if (worst === undefined || second === undefined) return null;
  return worst.avgAckMs > factor * second.avgAckMs + SLOW_MARGIN_MS ? worst.id : null;
}
