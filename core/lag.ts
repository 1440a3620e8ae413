/**
 * Replication lag as Tarantool's RFC (option 3) wants it, on the master's clock
 * only: while a record due to a replica is unacked, lag is now minus the time
 * it became due (the send time of the oldest unacked batch, in the common
 * case), so it grows with every read until the ack arrives and corrects it;
 * with nothing outstanding it is 0. The list of sent batches is also the
 * relay's window of unacked batches.
 *
 * A stream that restarts (a failure, a gap) forgets its window, so that the
 * relay sends again, but not the records it had sent: they are still unacked,
 * and the lag operators see (`behindMs`) keeps growing from the oldest of them
 * until an ack covers them all. A stopped replica's lag grows, it does not
 * drop to 0 at the first failed call.
 *
 * Records the relay has for a replica but cannot send (it does not know where
 * the replica is: a master that just restarted, or a stream that failed and is
 * backing off) are due all the same, from the first time the relay wanted to
 * send them (`due`). A restarted master knows nothing of what an earlier
 * incarnation sent, so its lag starts at the first moment it had a record for
 * the replica that the replica has not acked: never later than the truth, and
 * it still grows while the replica answers nothing.
 */

/** Records after the previous entry's `lastLsn`, through this one's, unacked since `since`. */
interface Unacked {
  lastLsn: number;
  since: number;
}

/**
 * Entries kept outside the window: a stream that keeps failing adds one per
 * restart. Past this many the two newest merge (the older time, the higher
 * LSN): that can only over-state the lag, and only once every older record
 * is acked.
 */
const MAX_BEHIND = 64;

export class LagTracker {
  private readonly sends: { lastLsn: number; sentAt: number }[] = [];
  /** Unacked records outside the window (sent before the stream restarted, or due and unsent), in LSN order. */
  private readonly behind: Unacked[] = [];

  /** Batches sent and not yet acked. */
  get size(): number {
    return this.sends.length;
  }

  sent(lastLsn: number, sentAt: number): void {
    this.sends.push({ lastLsn, sentAt });
  }

  /** An ack of `lsn` covers every batch, and every record due, at or before it. */
  acked(lsn: number): void {
    while (this.sends.length > 0 && (this.sends[0]?.lastLsn ?? 0) <= lsn) this.sends.shift();
    while (this.behind.length > 0 && (this.behind[0]?.lastLsn ?? 0) <= lsn) this.behind.shift();
  }

  /**
   * The stream restarted (a gap, a failure, a mode change, a snapshot that
   * left the replica at `ackedLsn`): nothing is outstanding in its window;
   * what was sent beyond `ackedLsn` stays behind until acked.
   */
  reset(ackedLsn: number): void {
    this.acked(ackedLsn);
    for (const send of this.sends) this.owe(send.lastLsn, send.sentAt);
    this.sends.length = 0;
  }

  /**
   * Records through `throughLsn` are due to the replica at `now` and cannot be
   * sent yet. Records already behind keep the time they became due.
   */
  due(throughLsn: number, now: number): void {
    this.owe(throughLsn, now);
  }

  private owe(lastLsn: number, since: number): void {
    const last = this.behind[this.behind.length - 1];
    // Already behind since then or earlier (a record resent after a restart keeps its first time).
    if (last !== undefined && lastLsn <= last.lastLsn) return;
    if (last !== undefined && this.behind.length >= MAX_BEHIND) {
      last.lastLsn = lastLsn;
      return;
    }
    this.behind.push({ lastLsn, since: Math.max(since, last?.since ?? since) });
  }

  oldestSentAt(): number | null {
    return this.sends[0]?.sentAt ?? null;
  }

  /** Since the oldest batch of this stream's window was sent (what the lag rule reads). */
  lagMs(now: number): number {
    const oldest = this.oldestSentAt();
    return oldest === null ? 0 : Math.max(0, now - oldest);
  }

  /** Since the oldest record still unacked became due, across stream restarts (status, metrics). */
  behindMs(now: number): number {
    const since = Math.min(this.oldestSentAt() ?? now, this.behind[0]?.since ?? now);
    return Math.max(0, now - since);
  }
}
