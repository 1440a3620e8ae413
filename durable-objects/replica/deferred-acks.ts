/**
 * debug_ack_delay_ms on a replica: an ack leaves `ackDelayMs` after the apply.
 * Acks that fall due ride on the next reply to the master; the master's relay
 * sends a message when an ack falls due, so the queue's timer fires
 * OWN_ACK_GRACE_MS late, and only a replica that heard nothing since sends the
 * ack as its own call. Acks that fall due together go out as one (an ack
 * covers every earlier LSN).
 */
import { DueQueue } from "../../core/due-queue";
import type { AckRequest, AppendRequest } from "../../core/protocol";
import type { NodeStub } from "../node-rpc";

/** How long a due ack waits for a message to ride on before it goes out as its own call. */
const OWN_ACK_GRACE_MS = 20;

export class DeferredAcks {
  private readonly delays = new DueQueue(undefined, () => this.flush(), OWN_ACK_GRACE_MS);
  /** The ack waiting to go out (and since when), and the highest LSN acked this way. */
  private ready: AckRequest | null = null;
  private readySince = 0;
  private sentLsn = 0;
  private master: NodeStub | null = null;
  /** Acks queued and not yet due: when each falls due, and the LSN it would ack. */
  private readonly pending: { due: number; lsn: number }[] = [];
  /** Raised by forget(): items queued before it give no ack. */
  private epoch = 0;

  constructor(
    /** The stub of the master that sent the latest message. */
    private readonly masterStub: (cluster: string) => NodeStub,
    private readonly silenced: () => boolean,
  ) {}

  /**
   * How long a message fetching the earliest held ack should wait here: until
   * that ack is due by this replica's clock (it was held from its apply), or
   * `askedMs` when none is held. The master counts from its reply instead,
   * a transit later, and an ack fetched that way came back that much late.
   */
  holdFor(askedMs: number): number {
    if (this.ready !== null && this.ready.appliedLsn > this.sentLsn) return 0;
    // Every message queues an item, heartbeats and fetches too, and most of
    // them can give no ack (their LSN went already): only the earliest that
    // can counts, or each fetch would wake at a leftover and come back empty.
    const floor = Math.max(this.sentLsn, this.ready?.appliedLsn ?? 0);
    let earliest = Number.POSITIVE_INFINITY;
    for (const item of this.pending) {
      if (item.lsn > floor && item.due < earliest) earliest = item.due;
    }
    return Number.isFinite(earliest) ? Math.max(0, earliest - performance.now()) : askedMs;
  }

  /**
   * Acks held from before a new term or a snapshot install speak of a log that
   * may be gone (an old master's tail at LSNs the new one writes again): they
   * are dropped, and the next message's ack says where the replica is now.
   */
  forget(): void {
    this.epoch++;
    this.ready = null;
    this.pending.length = 0;
  }

  /** Runs what fell due (a timer set by a call that has ended may not have fired). */
  drain(): void {
    this.delays.drain();
  }

  /** The master took acks only through `ackedLsn`: later ones may be lost, so they go again. */
  masterHas(ackedLsn: number): void {
    if (ackedLsn < this.sentLsn) this.sentLsn = ackedLsn;
  }

  /** The replica's applied LSN went back to `lsn` (a snapshot installed). */
  rewound(lsn: number): void {
    this.sentLsn = Math.min(this.sentLsn, lsn);
    this.forget();
  }

  defer(request: AppendRequest, appliedLsn: number): void {
    const epoch = this.epoch;
    const item = {
      due: performance.now() + Math.max(0, request.settings.ackDelayMs),
      lsn: appliedLsn,
    };
    this.pending.push(item);
    this.delays.add(request.settings.ackDelayMs, (held) => {
      const at = this.pending.indexOf(item);
      if (at >= 0) this.pending.splice(at, 1);
      if (epoch !== this.epoch) return;
      if (appliedLsn <= (this.ready?.appliedLsn ?? this.sentLsn)) return;
      this.ready = {
        cluster: request.cluster,
        replicaId: request.replicaId,
        term: request.term,
        appliedLsn,
        echoSentAt: request.sentAt,
        ackDelayedMs: held,
      };
      this.readySince = performance.now();
    });
  }

  /** Takes the ack that fell due, to piggyback it on a reply. */
  take(): AckRequest | undefined {
    const ack = this.ready;
    this.ready = null;
    if (ack === null || ack.appliedLsn <= this.sentLsn) return undefined;
    this.sentLsn = ack.appliedLsn;
    // The effective delay runs until the ack leaves, not until it fell due.
    return { ...ack, ackDelayedMs: ack.ackDelayedMs + (performance.now() - this.readySince) };
  }

  /** No reply to ride on: the due ack goes out as its own call. */
  flush(): void {
    if (this.silenced()) return;
    const ack = this.take();
    if (ack === undefined) return;
    const send = (retry: boolean): void => {
      this.master ??= this.masterStub(ack.cluster);
      this.master.ack(ack).catch((error: unknown) => {
        this.master = null;
        if (retry) send(false);
        else console.warn(`ack from ${ack.replicaId} lost; the next one covers it`, error);
      });
    };
    send(true);
  }

  /** A new master: acks go to it from now on. */
  forgetMaster(): void {
    this.master = null;
  }
}
