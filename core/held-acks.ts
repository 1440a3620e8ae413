/**
 * Acks a replica holds back (debug_ack_delay_ms), as its relay tracks them:
 * each batch's last LSN and the instant from which a message to the replica is
 * sure to find that ack due. A real link of latency D frees a window slot when
 * the call returns, after D; here the slot frees when the ack falls due, and
 * the next message picks the ack up on its reply: one call per batch, as on the
 * real link, instead of a batch call plus an ack call.
 */
export class HeldAcks {
  private readonly held: { lastLsn: number; dueAt: number }[] = [];

  /** The earliest instant a held ack falls due, if any is held. */
  get firstDueAt(): number | undefined {
    return this.held[0]?.dueAt;
  }

  /** Held acks already due at `now`: their batches no longer count against the window. */
  dueCount(now: number): number {
    let due = 0;
    for (const ack of this.held) if (ack.dueAt <= now) due++;
    return due;
  }

  /**
   * A reply said the replica holds the ack of a message sent at `sentAt`. The
   * replica got the message before this reply arrived, so the ack is due there
   * by `now + delayMs` on any clock running at the same rate.
   */
  expect(lastLsn: number | null, sentAt: number, now: number, delayMs: number, ackedLsn: number) {
    const dueAt = now + delayMs;
    // A message sent after the earliest held ack fell due came back without it
    // (the replica lost it in a restart): the replica deferred an ack of its
    // position with this message, and that one covers the batch if it has it.
    const first = this.held[0];
    if (first !== undefined && first.dueAt <= sentAt) first.dueAt = dueAt;
    if (lastLsn !== null && lastLsn > ackedLsn) this.held.push({ lastLsn, dueAt });
  }

  /** An ack through `ackedLsn` arrived: the acks it covers are no longer held. */
  acked(ackedLsn: number): void {
    while ((this.held[0]?.lastLsn ?? Number.POSITIVE_INFINITY) <= ackedLsn) this.held.shift();
  }

  clear(): void {
    this.held.length = 0;
  }
}
