/**
 * The shortest of a link's recent round trips: what the link itself costs,
 * with the time a call waited behind others (a busy event loop, a long batch)
 * filtered out, as the windowed minimum of TCP's and BBR's RTT estimates does.
 * Recent means within `windowMs`, so a link that became slow (or fast) is
 * seen as such within that time; with none that recent, the newest counts.
 * A relay overlaps calls only over a link this slow (relay_call_gap_ms): over
 * a fast one the call in flight comes back first and carries everything.
 */
export class RecentRtt {
  private readonly samples: { at: number; ms: number }[] = [];
  private next = 0;

  constructor(
    private readonly windowMs = 1_000,
    private readonly kept = 32,
  ) {}

  note(ms: number, at: number): void {
    const sample = { at, ms };
    if (this.samples.length < this.kept) this.samples.push(sample);
    else this.samples[this.next] = sample;
    this.next = (this.next + 1) % this.kept;
  }

  /** The shortest round trip in ms within the window; 0 before any (a link not known to be slow). */
  min(now: number): number {
    let min = Number.POSITIVE_INFINITY;
    let newest: { at: number; ms: number } | undefined;
    for (const sample of this.samples) {
      if (sample.at >= now - this.windowMs && sample.ms < min) min = sample.ms;
      if (newest === undefined || sample.at > newest.at) newest = sample;
    }
    if (min !== Number.POSITIVE_INFINITY) return min;
    return newest?.ms ?? 0;
  }
}
