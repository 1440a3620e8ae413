/** Pure arithmetic over repeated runs: medians, ratios and rounding for the tables. */

/** The median of the numbers (mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return Number.NaN;
  const sorted = [...finite].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? Number.NaN)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** a / b, or NaN when b is 0 or either side is missing. */
export function ratio(a: number, b: number): number {
  if (!Number.isFinite(a) || !Number.isFinite(b) || b === 0) return Number.NaN;
  return a / b;
}

/** Rounds to `digits` decimals. */
export function round(value: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** The median of one numeric field over a set of samples. */
export function medianOf<T>(samples: readonly T[], pick: (sample: T) => number): number {
  return median(samples.map(pick));
}

/**
 * Sustained load: mean inserts/s over the first and the last `span` whole seconds
 * of a per-second series (its last, partial second dropped), and last / first.
 */
export function sustainedShare(
  perSecond: readonly number[],
  span: number,
): { first: number; last: number; share: number } {
  const whole = perSecond.slice(0, -1);
  if (whole.length < 2 * span) {
    throw new Error(`need at least ${2 * span + 1} seconds, got ${perSecond.length}`);
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const first = mean(whole.slice(0, span));
  const last = mean(whole.slice(-span));
  return { first, last, share: first === 0 ? 0 : last / first };
}
