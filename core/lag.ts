/**
 * Replication lag as Tarantool's RFC (option 3) wants it, on the master's clock
 * only: while a sent record is unacked, lag is now minus the send time of the
 * oldest unacked batch, so it grows with every read until the ack arrives and
 * corrects it; with nothing outstanding it is 0. The same list is the relay's
 * window of unacked batches.
 *
 * A stream that restarts (a failure, a gap) forgets its window, so that the
 * relay sends again, but not the records it had sent: they are still unacked,
 * and the lag operators see (`behindMs`) keeps growing from the oldest of them
 * until an ack covers them all. A stopped replica's lag grows, it does not
 * drop to 0 at the first failed call.
 */
export class LagTracker {
  private readonly sends: { lastLsn: number; sentAt: number }[] = [];
  /** Records sent before the stream last restarted, unacked still: through which LSN, since when. */
  private stalled: { throughLsn: number; since: number } | null = null;

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
    if (this.stalled !== null && lsn >= this.stalled.throughLsn) this.stalled = null;
  }

  /**
   * The stream restarted (a gap, a failure, a mode change, a snapshot that
   * left the replica at `ackedLsn`): nothing is outstanding in its window;
   * what was sent beyond `ackedLsn` stays behind until acked.
   */
  reset(ackedLsn: number): void {
    this.acked(ackedLsn);
    const oldest = this.sends[0];
    const last = this.sends[this.sends.length - 1];
    if (oldest !== undefined && last !== undefined) {
      this.stalled = {
        throughLsn: Math.max(this.stalled?.throughLsn ?? 0, last.lastLsn),
        since: Math.min(this.stalled?.since ?? oldest.sentAt, oldest.sentAt),
      };
    }
    this.sends.length = 0;
  }

  oldestSentAt(): number | null {
    return this.sends[0]?.sentAt ?? null;
  }

  /** Since the oldest batch of this stream's window was sent (what the lag rule reads). */
  lagMs(now: number): number {
    const oldest = this.oldestSentAt();
    return oldest === null ? 0 : Math.max(0, now - oldest);
  }

  /** Since the oldest record still unacked was sent, across stream restarts (status, metrics). */
  behindMs(now: number): number {
    const since = Math.min(this.oldestSentAt() ?? now, this.stalled?.since ?? now);
    return Math.max(0, now - since);
  }
}
