/**
 * A relay streams the master's log to one replica over typed DO RPC, in LSN
 * order, pipelined: up to `relay_calls_in_flight` calls and `relay_window`
 * unacked batches on one stub (calls on one stub arrive in order), and
 * whatever accumulates while either is full goes out as the next batch. Few
 * calls in flight make large batches: every call costs the replica a
 * transaction, so under load batching is what keeps up. It never waits for one batch's ack before
 * sending the next, so an ack delay of D does not cap a replica at one batch
 * per D. A failed call breaks the stub: the relay makes a new one, backs off,
 * and resends from the last LSN the replica acked.
 */

import { HeldAcks } from "../../core/held-acks";
import { LagTracker } from "../../core/lag";
import type { AppendRequest, AppendResponse, LogRecord } from "../../core/protocol";
import type { NodeStub } from "../node-rpc";
import { CallGap } from "./call-gap";
import { asAck, type RelayHost } from "./relay-host";

const MIN_BACKOFF_MS = 20;
/** Unacked batches allowed, in windows, when acks are deferred and some fall due late. */
const MAX_UNACKED_WINDOWS = 2;
const MAX_BACKOFF_MS = 2_000;

export class RelayLink {
  /** Removed from the cluster: sends nothing more. */
  protected retired = false;
  /** Fault hook: the link to the replica is cut; nothing is sent until it is restored. */
  disconnected = false;

  /** Highest LSN sent in the current generation; null until the replica told us where it is. */
  protected sentLsn: number | null = null;
  /** The replica's position as the protocol counts it (a snapshot resumed from an older point lowers it). */
  ackedLsn = 0;
  /**
   * The highest LSN the replica acked to this term's master, never lowered,
   * and seeded at start-up with what an earlier incarnation remembered
   * (acked-memory.ts): what status and /metrics report, never what the
   * protocol counts on.
   */
  highestAckedLsn = 0;
  protected inFlight = 0;
  protected generation = 0;
  protected stub: NodeStub;
  protected backoffMs = 0;
  /** While set, the relay is backing off after a failed call and sends nothing. */
  protected retryAt: number | null = null;
  lastSentAt = 0;
  lastAckAt: number | null = null;
  /**
   * Send time of the latest message the replica answered in this term (a
   * refusal is no answer): what quorum contact counts (core/quorum.ts).
   */
  answeredSentAt = 0;
  /** Where the replica says its own log is truncated through (its answers). */
  replicaTruncatedThrough = 0;
  /** Last time the replica answered anything (reachability, not progress). */
  lastHeardAt: number | null = null;
  lastError: string | null = null;
  /** Consecutive failed calls; reset by any answer. */
  failures = 0;
  /**
   * Pull mode (logput_window): no live records, only heartbeats that tell the
   * replica to pull the log in order; live records resume once it caught up.
   */
  pulling = false;
  /** Records the replica reported skipping (it had them already), and heartbeats sent. */
  skipped = 0;
  heartbeats = 0;
  /** Append calls made (batches, heartbeats and ack fetches): what replication costs in calls. */
  calls = 0;
  /** Calls that carried records. */
  batches = 0;
  /** Empty calls that fetched a held ack (debug_ack_delay_ms; the replica answers when it is due). */
  ackFetches = 0;
  /** Deferred acks the replica had to send as calls of its own (no message to ride on). */
  ackCalls = 0;
  /** Empty messages sent only to tell the replica a new commit point (see tellCommitPoint). */
  commitPointNotices = 0;
  /** The commit point the last message carried. */
  protected commitPointSent = 0;
  /** Pull requests this replica made (catch-up batches served by the master). */
  pullBatches = 0;
  /** While the master streams a snapshot to this replica: no records, heartbeats only. */
  snapshotting = false;
  snapshots = 0;
  /** Batches sent and not yet acked: the window, and the lag's anchor. */
  readonly lag = new LagTracker();
  /** Acks the replica holds back (debug_ack_delay_ms). */
  protected readonly heldAcks = new HeldAcks();
  /** An empty message is out fetching a held ack (the replica answers when it is due). */
  protected collecting = false;
  /** Heartbeats sent and not answered: at most one periodic one (heartbeatIfDue). */
  protected heartbeatsInFlight = 0;
  /** relay_call_gap_ms: when a further batch call may go while one is out. */
  private readonly gap = new CallGap(
    () => this.host.callGapMs(),
    () => this.pump(),
  );

  constructor(
    readonly id: string,
    protected readonly host: RelayHost,
  ) {
    this.stub = host.newStub(id);
  }

  /** Backing off after a failure, or cut off by the fault hook: it has sending left to do. */
  get backingOff(): boolean {
    return this.retryAt !== null || this.disconnected;
  }

  get position(): number | null {
    return this.sentLsn;
  }

  /** Sends what the window allows; cheap to call after every commit and ack. */
  pump(): void {
    if (this.retired) return;
    if (this.retryAt !== null || this.disconnected || this.sentLsn === null) this.noteUnsendable();
    if (this.retryAt !== null || this.disconnected) return;
    if (this.sentLsn === null) {
      // Ask where the replica is before sending records it may already have.
      if (this.inFlight === 0) this.send([]);
      return;
    }
    if (this.pulling || this.snapshotting) return;
    if (this.sentLsn < this.host.truncatedThrough()) {
      this.host.requestSnapshot(this.id);
      return;
    }
    const window = this.host.window();
    // A held fetch (below) waits at the replica, and a heartbeat may wait behind a slow
    // apply: neither takes a batch's place.
    const calls = this.host.callsInFlight() + (this.collecting ? 1 : 0) + this.heartbeatsInFlight;
    const now = this.host.now();
    // The window counts batches whose ack is still travelling, not calls not yet
    // answered: with deferred acks the calls return at once, and records would
    // trickle out one commit per call instead of accumulating into batches.
    while (
      this.inFlight < calls &&
      this.gap.passed(now) &&
      this.awaitingAcks(now) < window &&
      this.lag.size < window * MAX_UNACKED_WINDOWS &&
      this.sentLsn < this.host.masterLsn()
    ) {
      const records = this.host.readLog(
        this.sentLsn + 1,
        this.host.batchMaxRecords(),
        this.host.batchMaxBytes(),
      );
      if (records.length === 0) break;
      this.send(records);
    }
    if (this.sentLsn !== null && this.sentLsn < this.host.masterLsn()) this.gap.waitOut(now);
    this.collectDueAcks(now);
    this.tellCommitPoint();
  }

  /**
   * The relay has records the replica has not acked but cannot send them (it
   * does not know where the replica is yet, or the stream is down): they are
   * due from now, so the lag of a replica that answers nothing grows, even for
   * a master that has just restarted and never sent it a batch.
   */
  protected noteUnsendable(): void {
    const through = this.host.masterLsn();
    if (through > Math.max(this.ackedLsn, this.highestAckedLsn)) {
      this.lag.due(through, this.host.now());
    }
  }

  /** `ackedLsn` rose (or may have): what it covers is no longer outstanding. */
  protected noteAcked(): void {
    if (this.ackedLsn > this.highestAckedLsn) this.highestAckedLsn = this.ackedLsn;
    this.lag.acked(this.ackedLsn);
  }

  /**
   * A replica answers a strong read only once the commit point it knows of has
   * reached the LSN the read ran at, and it learns the commit point from the
   * master's messages. When the point has moved past the one this replica was
   * last told, the replica has applied more than that, and nothing is on its
   * way to it, an empty message brings the new point now instead of the next
   * heartbeat. Under load there is always a call in flight, and the batches
   * carry it.
   */
  protected tellCommitPoint(): void {
    if (this.inFlight > 0 || this.ackedLsn <= this.commitPointSent) return;
    if (this.host.knownCommitPoint() <= this.commitPointSent) return;
    this.commitPointNotices++;
    // Sent as a heartbeat is: it takes no batch's place, so with one call in
    // flight the next commit does not wait behind it.
    this.send([], 0, true);
  }

  /** Batches whose ack has not had time to come back (a held ack that fell due has). */
  protected awaitingAcks(now: number): number {
    return this.lag.size - this.heldAcks.dueCount(now);
  }

  /**
   * With deferred acks and nothing to send, the relay fetches the earliest held
   * ack with an empty message that the replica answers when the ack is due
   * (`holdMs`). Waiting inside the call, not on a timer here: a timer set while
   * handling a request that has ended can stay silent until the object's next
   * event, and at the end of a burst there is none (the alarm came 1-2 s later).
   * The replica sends an ack on its own only if no message comes for a while
   * after it fell due.
   */
  protected collectDueAcks(now: number): void {
    const dueAt = this.heldAcks.firstDueAt;
    // A message sent since the ack fell due brings it back with its reply.
    if (dueAt === undefined || this.collecting || this.lastSentAt >= dueAt) return;
    if (this.inFlight >= this.host.window()) return;
    this.send([], Math.max(0, Math.ceil(dueAt - now)));
  }

  /** The stream restarted (a gap, a failure, a mode change): nothing is outstanding. */
  protected forgetOutstanding(): void {
    this.lag.reset(this.ackedLsn);
    this.heldAcks.clear();
  }

  /**
   * If nothing went out for heartbeat_ms: a batch if one can go (it carries the
   * lease as well), else a heartbeat, but not while one is still on its way. A
   * replica slower per call than a few heartbeat periods would otherwise have
   * its calls taken by heartbeats and get no records.
   */
  heartbeatIfDue(): void {
    if (this.retryAt !== null || this.retired || this.disconnected) return;
    if (this.host.now() - this.lastSentAt < this.host.heartbeatMs()) return;
    if (this.sentSomething(() => this.pump()) || this.heartbeatsInFlight > 0) return;
    if (this.inFlight >= this.host.window()) return;
    this.heartbeats++;
    this.send([], 0, true);
  }

  /** Whether `act` sent anything. */
  protected sentSomething(act: () => void): boolean {
    const calls = this.calls;
    act();
    return this.calls !== calls;
  }

  protected send(records: LogRecord[], holdMs = 0, heartbeat = false): void {
    const generation = this.generation;
    const held = holdMs > 0;
    if (held) this.collecting = true;
    if (heartbeat) this.heartbeatsInFlight++;
    const sentAt = this.host.now();
    const last = records[records.length - 1];
    if (held) this.ackFetches++;
    if (last !== undefined) {
      this.batches++;
      this.sentLsn = last.lsn;
      this.lag.sent(last.lsn, sentAt);
      this.gap.sent(sentAt);
    }
    this.inFlight++;
    this.calls++;
    this.lastSentAt = sentAt;
    // Before the lease: the lease floor then covers the commit point this message carries.
    const commitPoint = this.host.commitPoint();
    const request: AppendRequest = {
      cluster: this.host.cluster,
      replicaId: this.id,
      from: this.host.self,
      term: this.host.term(),
      termStartLsn: this.host.termStartLsn(),
      sentAt,
      masterLsn: this.host.masterLsn(),
      leaseUntil: this.host.grantLease(this.id, last?.lsn ?? this.ackedLsn),
      commitPoint,
      settings: this.host.settings(),
      records,
      ...(records[0] === undefined ? {} : { prevTerm: this.host.termAt(records[0].lsn - 1) }),
      truncatedThrough: this.host.truncatedThrough(),
      pull: this.pulling,
      ackedLsn: this.ackedLsn,
      ...(held ? { holdMs } : {}),
    };
    this.commitPointSent = request.commitPoint;
    this.host.append(this.id, this.stub, request).then(
      (response) => {
        if (held) this.collecting = false;
        if (heartbeat) this.heartbeatsInFlight--;
        if (last !== undefined) this.gap.batchAnswered();
        const answeredAt = this.host.now();
        if (!held) this.gap.roundTrip(answeredAt - sentAt, answeredAt);
        if (response.staleTerm !== undefined) this.host.superseded(response.staleTerm);
        else if (response.refused === undefined) {
          this.onResponse(generation, response, last?.lsn ?? null, sentAt);
        } else this.onError(generation, new Error(response.refused));
      },
      (error: unknown) => {
        if (held) this.collecting = false;
        if (heartbeat) this.heartbeatsInFlight--;
        if (last !== undefined) this.gap.batchAnswered();
        this.onError(generation, error);
      },
    );
  }

  protected onResponse(
    generation: number,
    response: AppendResponse,
    lastLsn: number | null,
    sentAt: number,
  ): void {
    const carried = lastLsn !== null;
    this.inFlight--;
    this.failures = 0;
    // Only a batch that went through ends the backoff: a replica that answers
    // heartbeats but fails every apply must not be retried in a tight loop.
    if (carried) {
      this.backoffMs = 0;
      this.lastError = null;
    }
    const now = this.host.now();
    this.lastHeardAt = now;
    if (sentAt > this.answeredSentAt) this.answeredSentAt = sentAt;
    const truncated = response.logTruncatedThrough ?? 0;
    if (truncated > this.replicaTruncatedThrough) this.replicaTruncatedThrough = truncated;
    this.skipped += response.skipped;
    // A reply to a call of an earlier stream (before a snapshot, a rewind, a
    // gap) speaks of a state that is gone: a replica still diverged or
    // rebuilding says so again on the next call.
    const current = generation === this.generation;
    if (current) {
      if (this.sentLsn === null) {
        this.sentLsn = response.appliedLsn;
      } else if (response.gap) {
        // The replica is behind what we sent: start a new generation from its position.
        this.generation++;
        this.sentLsn = response.appliedLsn;
        this.forgetOutstanding();
      }
    }
    if (response.rebuilding && !this.snapshotting && current) {
      // A rebuild that never finished (the master restarted mid-snapshot): start over.
      this.host.requestSnapshot(this.id);
      return;
    }
    // A diverged or rebuilding replica's applied LSN is of a log the master does
    // not hold (an old master's tail at LSNs this term writes again): no ack.
    const unsound = response.diverged !== undefined || response.rebuilding === true;
    if (!response.ackDeferred && !unsound) this.takeAck(response, carried, now);
    // A held ack of another term's message speaks of another log: not taken.
    if (!unsound && response.dueAck !== undefined && response.dueAck.term === this.host.term()) {
      this.takeAck(asAck(response.dueAck), true, now);
    }
    if (response.ackDeferred && generation === this.generation) {
      const delayMs = this.host.settings().ackDelayMs;
      this.heldAcks.expect(lastLsn, sentAt, now, delayMs, this.ackedLsn);
    }
    if (response.diverged !== undefined && !this.snapshotting && current) {
      this.host.diverged(this.id, response.diverged);
      return;
    }
    this.pump();
  }

  /** A deferred ack (debug_ack_delay_ms) arrived as its own call. */
  receiveAck(response: AppendResponse): void {
    this.ackCalls++;
    const now = this.host.now();
    this.lastHeardAt = now;
    if (response.echoSentAt > this.answeredSentAt) this.answeredSentAt = response.echoSentAt;
    this.takeAck(response, true, now);
    this.pump();
  }

  protected takeAck(response: AppendResponse, carried: boolean, now: number): void {
    this.lastAckAt = now;
    if (response.appliedLsn > this.ackedLsn) this.ackedLsn = response.appliedLsn;
    this.noteAcked();
    this.heldAcks.acked(this.ackedLsn);
    this.host.onAck(this.id, response, now - response.echoSentAt, carried);
  }

  protected onError(generation: number, error: unknown): void {
    this.inFlight--;
    this.fail(error, generation === this.generation);
  }

  /** A failed call breaks the stub: a new one, a backoff, and a fresh probe of the replica. */
  protected fail(error: unknown, current: boolean): void {
    this.failures++;
    this.lastError = error instanceof Error ? error.message : String(error);
    if (current) {
      this.generation++;
      this.stub = this.host.newStub(this.id);
      this.sentLsn = null;
      this.forgetOutstanding();
      this.backoffMs = Math.min(MAX_BACKOFF_MS, Math.max(MIN_BACKOFF_MS, this.backoffMs * 2));
      this.retryAt = this.host.now() + this.backoffMs;
      this.host.scheduleRestart(this.id, this.retryAt);
    }
    this.host.onFailure(this.id, error);
  }
}
