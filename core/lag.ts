/**
 * Replication lag as Tarantool's RFC (option 3) wants it, on the master's clock
 * only: while a sent record is unacked, lag is now minus the send time of the
 * oldest unacked batch, so it grows with every read until the ack arrives and
 * corrects it; with nothing outstanding it is 0. The same list is the relay's
 * window of unacked batches.
 */
export class LagTracker {
  private readonly sends: { lastLsn: number; sentAt: number }[] = [];

  /** Batches sent and not yet acked. */
  get size(): number {
    return this.sends.length;
  }

  sent(lastLsn: number, sentAt: number): void {
    this.sends.push({ lastLsn, sentAt });
  }

  /** An ack of `lsn` covers every batch ending at or before it. */
  acked(lsn: number): void {
    while (this.sends.length > 0 && (this.sends[0]?.lastLsn ?? 0) <= lsn) this.sends.shift();
  }

  /** The stream restarted (a gap, a failure, a mode change): nothing is outstanding. */
  reset(): void {
    this.sends.length = 0;
  }

  oldestSentAt(): number | null {
    return this.sends[0]?.sentAt ?? null;
  }

  lagMs(now: number): number {
    const oldest = this.oldestSentAt();
    return oldest === null ? 0 : Math.max(0, now - oldest);
  }
}
