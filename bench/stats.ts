/** Summary statistics shared by the load drivers (Node and in-runtime alike). */

/** The p-th percentile of an ascending array (nearest rank); 0 for no samples. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}
