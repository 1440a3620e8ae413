/**
 * The replica role of a node: applies the master's log strictly in LSN order,
 * one transaction per batch, keeping the records and their saved results as
 * the master does (a promoted replica has what a master needs), and acks its
 * applied LSN. Records it already has are skipped and
 * still acked; a batch that starts past its next LSN is answered with its
 * applied LSN so the relay resends from there. It serves reads under the lease
 * the master grants with every message.
 */
import { ApiError } from "../../core/errors";
import { FIRST_MASTER, parseNodeName } from "../../core/members";
import type { TermVerdict } from "../../core/terms";
import type {
  AppendRequest,
  AppendResponse,
  LogRecord,
  NodeChecksums,
  PullResponse,
  QueryRequest,
  ReplicaQueryOutcome,
  SnapshotMessage,
  SnapshotReply,
} from "../../core/protocol";
import { nodeStub } from "../node-rpc";
import type { NodeStore } from "../node-store";
import { ensureReplicaFlag } from "../sqlite/apply";
import { nodeChecksums } from "../sqlite/checksums";
import { runQuery } from "../sqlite/query";
import type { SqlNode } from "../sqlite/schema";
import { type SnapshotState, snapshotStep } from "../sqlite/snapshot-install";
import { markLogResultsUnindexed } from "../log-results";
import { applyRecords, logMismatch } from "./apply-batch";
import { DeferredAcks } from "./deferred-acks";
import { FailoverWatchdog } from "./watchdog";
import { LogKeeper } from "./log-keeper";
import { ReplicaFaults } from "./faults";
import { ReplicaTerms } from "./terms";
import { ReplicaReadGate } from "./read-gate";
import { LeaseAsk } from "./lease-ask";

const PULL_BATCH_RECORDS = 1000;
/** Longest a fetch for a held ack may wait (debug_ack_delay_ms is at most a minute). */
const MAX_HOLD_MS = 60_000;
/** Least time a lease request may take before the read goes to the master. */
const LEASE_ASK_MIN_MS = 1_000;

export class ReplicaRole {
  readonly kind = "replica";
  private appliedLsn = 0;
  private identity = "";
  /** The lease, the guard band and the commit point: what a strong read here may return. */
  private readonly strongReads = new ReplicaReadGate();
  private readonly acks: DeferredAcks;
  private readonly leases: LeaseAsk;
  /** The test-only faults of this replica (stopped, slow, crashing mid-batch). */
  readonly fault: ReplicaFaults;
  /** master_failover_ms: how long the master has been silent (node.ts runs the promotion). */
  readonly watchdog: FailoverWatchdog;
  private readonly log: LogKeeper;
  /** The master that sent the latest message: acks and pulls go to it. */
  private masterId = FIRST_MASTER;
  /** The terms this node has seen and checked (replica/terms.ts). */
  private readonly terms: ReplicaTerms;
  private pulling = false;
  /** Set while a snapshot is being installed: no applies, no reads. */
  private rebuilding = false;
  /** The snapshot being staged, if any (kept in KV: staging survives a restart). */
  private snapshot: SnapshotState | null = null;
  /**
   * Set when this replica computed something other than the master for a log
   * entry: it applies nothing and serves no reads until rebuilt from a snapshot.
   */
  private diverged: { lsn: number; detail: string } | null = null;

  /** Builds the role on a node's storage; call inside blockConcurrencyWhile. */
  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    private readonly node: SqlNode,
    private readonly store: NodeStore,
    partitioned: () => boolean = () => false,
  ) {
    ctx.storage.transactionSync(() => {
      ensureReplicaFlag(node.sql);
      markLogResultsUnindexed(store);
    });
    this.leases = new LeaseAsk(env, partitioned);
    this.acks = new DeferredAcks(
      (cluster) => nodeStub(env, cluster, this.masterId),
      () => this.fault.stopped,
    );
    this.log = new LogKeeper(ctx.storage, store);
    this.watchdog = new FailoverWatchdog(ctx.storage);
    const kv = ctx.storage.kv;
    // The applied LSN is the log's: the newest record kept, or the truncation point.
    this.appliedLsn = store.lastLsn();
    this.identity = kv.get<string>("m:identity") ?? "";
    this.masterId = kv.get<string>("m:master_id") ?? FIRST_MASTER;
    this.fault = new ReplicaFaults(ctx, node, () => this.strongReads.dropLease());
    this.terms = new ReplicaTerms(kv);
    this.rebuilding = kv.get("m:rebuilding") !== undefined;
    this.snapshot = kv.get<SnapshotState>("m:snapshot") ?? null;
    this.diverged = kv.get<{ lsn: number; detail: string }>("m:diverged") ?? null;
  }

  /** Applies a batch (or a heartbeat: no records) and returns the ack. */
  async append(request: AppendRequest): Promise<AppendResponse> {
    // A fetch for a held ack waits here until the ack is due: a timer inside a
    // live call fires when due, one set by a call that has ended may not.
    if (request.holdMs !== undefined && request.holdMs > 0) {
      const holdMs = this.acks.holdFor(request.holdMs);
      if (holdMs > 0) await sleep(Math.min(holdMs, MAX_HOLD_MS));
    }
    this.acks.drain();
    if (this.fault.stopped) return this.refusal(request);
    const verdict = this.terms.judge(request, this.appliedLsn);
    if (verdict.kind === "refuse")
      return { ...this.refusal(request), staleTerm: verdict.knownTerm };
    if (verdict.kind !== "same") this.adoptTerm(request.term, verdict);
    this.watchdog.heard(request.settings, Date.now());
    if (request.from !== this.masterId) {
      this.masterId = request.from;
      // Kept: a replica restarted while its cluster sleeps asks it for a lease.
      this.ctx.storage.kv.put("m:master_id", request.from);
      this.acks.forgetMaster();
    }
    if (this.identity === "") this.setMeta("identity", `${request.cluster}/${request.replicaId}`);
    if (this.rebuilding || this.diverged !== null) {
      // A heartbeat during a rebuild, or after diverging: answer it, apply
      // nothing, take no lease.
      this.strongReads.learn(request, false);
      return {
        appliedLsn: this.appliedLsn,
        gap: request.records.length > 0,
        echoSentAt: request.sentAt,
        skipped: 0,
        applied: 0,
        ackDelayedMs: 0,
        ...(this.rebuilding ? { rebuilding: true as const } : {}),
        ...(this.diverged === null ? {} : { diverged: this.diverged }),
      };
    }
    const delay = request.settings.applyDelayMs + this.fault.delayMs;
    if (delay > 0) await sleep(delay);
    if (this.fault.stopped) return this.refusal(request);
    // A fence may have come while this message waited: its term is judged again.
    if (request.term < this.terms.known) {
      return { ...this.refusal(request), staleTerm: this.terms.known };
    }
    const outcome = this.applyBatch(request.records, request.prevTerm);
    // The lease is taken only after the records that came with it are applied.
    this.strongReads.learn(request, !outcome.gap && this.diverged === null);
    if (request.pull && request.masterLsn > this.appliedLsn && !this.rebuilding) {
      this.startPulling(request);
    }
    // Acks the master has not taken may be lost: they go again.
    this.acks.masterHas(request.ackedLsn);
    const appliedLsn = this.appliedLsn;
    const ackDeferred = request.settings.ackDelayMs > 0 && !outcome.gap;
    if (ackDeferred) this.acks.defer(request, appliedLsn);
    const due = this.acks.take();
    this.log.upkeep(
      request.truncatedThrough,
      appliedLsn,
      request.settings.idempotencyRetentionMs,
      request.commitPoint,
      request.records.length,
    );
    return {
      appliedLsn,
      gap: outcome.gap,
      echoSentAt: request.sentAt,
      skipped: outcome.skipped,
      applied: outcome.applied,
      ackDelayedMs: 0,
      ackDeferred,
      logTruncatedThrough: this.log.through,
      ...(due === undefined ? {} : { dueAck: due }),
      ...(this.diverged === null ? {} : { diverged: this.diverged }),
    };
  }

  /**
   * A new term: remembered before anything of it is applied; the lease of the
   * old term goes with it. A tail from an older master makes this replica
   * diverged, and the new master rebuilds it from a snapshot.
   */
  private adoptTerm(term: number, verdict: TermVerdict): void {
    this.terms.adopt(term);
    this.strongReads.dropLease();
    this.acks.forget();
    if (verdict.kind === "diverged-tail" && this.diverged === null) {
      this.diverged = { lsn: this.appliedLsn, detail: verdict.detail };
      this.ctx.storage.kv.put("m:diverged", this.diverged);
      console.warn(`${this.identity}: ${verdict.detail}`);
    }
  }

  /**
   * A promotion without the master fences this node into `term`: from now on
   * it refuses every older term, the old master's included, and drops its
   * lease. Answers where its log ends, and whether it could be the master.
   */
  prepareTerm(term: number): {
    knownTerm: number;
    lastTerm: number;
    lastLsn: number;
    refusal: string | null;
  } {
    // A stopped replica (a test fault: a node that is down) answers nothing.
    if (this.fault.stopped) throw new Error("replica is stopped");
    if (this.terms.learn(term)) {
      this.strongReads.dropLease();
      // The new term's master gets a whole period before this member calls it silent.
      this.watchdog.newTerm(Date.now());
    }
    return {
      knownTerm: this.terms.known,
      lastTerm: this.store.lastTerm(),
      lastLsn: this.appliedLsn,
      refusal: this.promotable(this.appliedLsn, term, true),
    };
  }

  get term(): number {
    return this.terms.known;
  }

  /** Null if this replica may become master of `term` with a log through `lastLsn`, else why not. */
  promotable(lastLsn: number, term: number, evenIfStopped = false): string | null {
    if (this.fault.stopped && !evenIfStopped) return "it is stopped";
    if (this.rebuilding) return "it is being rebuilt from a snapshot";
    if (this.diverged !== null) return `it diverged at LSN ${this.diverged.lsn}`;
    if (term < this.terms.known) return `it knows term ${this.terms.known}, later than ${term}`;
    if (this.appliedLsn < lastLsn) {
      return `it has applied through LSN ${this.appliedLsn}, the old master stopped at ${lastLsn}`;
    }
    return null;
  }

  /** A stopped replica answers nothing useful; the relay treats this as a failed call. */
  private refusal(request: AppendRequest): AppendResponse {
    return {
      refused: `${request.replicaId} is stopped`,
      appliedLsn: this.appliedLsn,
      gap: false,
      echoSentAt: request.sentAt,
      skipped: 0,
      applied: 0,
      ackDelayedMs: 0,
    };
  }

  /**
   * Applies records in LSN order, all in one transaction (apply-batch.ts). A
   * record whose effects differ from the master's rolls the whole batch back
   * and marks the replica diverged (it applies nothing more until rebuilt).
   */
  private applyBatch(
    records: readonly LogRecord[],
    prevTerm: number | undefined,
  ): {
    gap: boolean;
    skipped: number;
    applied: number;
  } {
    const mismatch = logMismatch(this.log, records, prevTerm, this.appliedLsn);
    if (mismatch !== null) {
      // Not the master's log: an older master's tail, or a term this node missed.
      this.diverged = mismatch;
      this.ctx.storage.kv.put("m:diverged", this.diverged);
      console.warn(`${this.identity}: ${mismatch.detail}`);
      return { gap: false, skipped: 0, applied: 0 };
    }
    const outcome = applyRecords(
      {
        storage: this.ctx.storage,
        node: this.node,
        log: this.log,
        crashMidBatch: this.fault.crashMidBatch,
        abort: (reason) => this.ctx.abort(reason),
      },
      records,
      this.appliedLsn,
    );
    this.appliedLsn += outcome.applied;
    if (outcome.diverged !== null) {
      this.diverged = { lsn: outcome.diverged.lsn, detail: outcome.diverged.detail };
      this.ctx.storage.kv.put("m:diverged", this.diverged);
      console.warn(`${this.identity}: ${outcome.diverged.message}`);
    }
    return outcome;
  }

  /**
   * Catch-up: fetch the log in order, in bounded batches, until the master says
   * the batch reached its LSN. One loop at a time; a failure ends it, and the
   * next heartbeat that asks for a pull starts a new one.
   */
  private startPulling(request: AppendRequest): void {
    if (this.pulling) return;
    this.pulling = true;
    const master = nodeStub(this.env, request.cluster, request.from);
    const loop = async () => {
      try {
        for (;;) {
          if (this.fault.stopped) return;
          const response = (await master.pullLog({
            cluster: request.cluster,
            replicaId: request.replicaId,
            fromLsn: this.appliedLsn + 1,
            maxRecords: PULL_BATCH_RECORDS,
          })) as PullResponse;
          if (this.fault.stopped) return;
          if (request.settings.applyDelayMs > 0) await sleep(request.settings.applyDelayMs);
          if (response.snapshot) return;
          // A newer term than the one that asked for the pull: that master is gone.
          if (this.terms.known > request.term) return;
          this.applyBatch(response.records, response.prevTerm);
          if (response.caughtUp || response.records.length === 0) return;
        }
      } catch (error) {
        console.warn(`pull by ${request.replicaId} stopped`, error);
      } finally {
        this.pulling = false;
      }
    };
    this.ctx.waitUntil(loop());
  }

  async replicaQuery(request: QueryRequest, servedBy: string): Promise<ReplicaQueryOutcome> {
    this.acks.drain();
    this.acks.flush();
    const cannot = this.cannotServe();
    if (cannot !== null) return { kind: "redirect", reason: cannot };
    const strong = request.consistency === "strong";
    if (strong && !this.strongReads.leaseValid(Date.now()) && !(await this.askLease(request))) {
      return { kind: "redirect", reason: "no valid lease" };
    }
    if (strong && this.strongReads.behindCommitPoint(this.appliedLsn)) {
      return { kind: "redirect", reason: "behind the commit point" };
    }
    if (request.consistency === "bookmark" && this.appliedLsn < request.minLsn) {
      return { kind: "redirect", reason: "behind the bookmark" };
    }
    try {
      const result = runQuery(
        this.node,
        request.sql,
        request.params,
        request.format,
        request.counters,
      );
      // Read first, at this LSN, then wait (not holding the event loop) until it is acknowledged.
      const appliedLsn = this.appliedLsn;
      const late = strong ? await this.strongReads.settle(appliedLsn) : null;
      if (late !== null) return { kind: "redirect", reason: late };
      return { kind: "rows", response: { ...result, servedBy, appliedLsn } };
    } catch (error) {
      if (error instanceof ApiError) return { kind: "error", error: error.toBody() };
      throw error;
    }
  }

  /**
   * No lease (the master slept, or it ran out between messages): ask the
   * master for one. Taken only in the term it was asked in, by a replica that
   * still may serve and has applied what the grant covers.
   */
  private async askLease(request: QueryRequest): Promise<boolean> {
    const term = this.terms.known;
    const self = parseNodeName(this.ctx.id.name)?.member ?? "";
    const bound = Math.max(this.strongReads.waitBound, LEASE_ASK_MIN_MS);
    const grant = await this.leases.ask(request.cluster, this.masterId, self, term, bound);
    if (grant === null || grant.refused !== undefined || grant.term !== term) return false;
    if (this.terms.known !== term || this.cannotServe() !== null) return false;
    if (this.appliedLsn < grant.throughLsn) return false;
    this.strongReads.grant(grant);
    return this.strongReads.leaseValid(Date.now());
  }

  /** One step of a rebuild from the master's snapshot (sqlite/snapshot-install.ts). */
  async installSnapshot(message: SnapshotMessage): Promise<SnapshotReply> {
    if (this.fault.stopped) throw new Error("replica is stopped");
    const kv = this.ctx.storage.kv;
    if (message.phase === "begin") {
      // A snapshot from a master of an older term is no longer the cluster's state.
      if (message.term < this.terms.known) {
        throw new Error(
          `snapshot of term ${message.term} refused: this node knows term ${this.terms.known}`,
        );
      }
      this.terms.learn(message.term);
      this.rebuilding = true;
      this.strongReads.dropLease();
      kv.put("m:rebuilding", String(message.lsn));
      // A new snapshot brings every saved result it holds: older ones here may
      // belong to commits that are not in it (a tail another master discarded).
      if (this.snapshot?.id !== message.id) this.store.clearResults();
    }
    if (message.phase === "results") {
      if (this.snapshot?.id !== message.id)
        throw new Error(`snapshot ${message.id} was not begun here`);
      // Each keeps its own age (a master of an older build sent none: now).
      const now = Date.now();
      this.ctx.storage.transactionSync(() => {
        for (const { createdAt, ...result } of message.results) {
          this.store.saveResult(result, createdAt ?? now);
        }
      });
      return { appliedLsn: this.appliedLsn };
    }
    // The end installs: a master replaced since the begin (this node took a
    // later term meanwhile) must not install its state, which may hold a tail
    // the new master does not have.
    if (message.phase === "end" && message.term < this.terms.known) {
      throw new Error(
        `snapshot end of term ${message.term} refused: this node knows term ${this.terms.known}`,
      );
    }
    const step = snapshotStep(this.ctx.storage, this.node, this.snapshot, message, () => {
      if (message.phase !== "end") return;
      // The log restarts after the snapshot: its records are in the tables now.
      this.store.restartLog(message.lsn, message.logEnd, message.lastTerm);
      // What it holds now is the sending master's own state of its term: the
      // term's next message must not be taken for another master's tail.
      this.terms.checked(message.term);
      kv.delete("m:rebuilding");
      kv.delete("m:diverged");
    });
    this.snapshot = step.state;
    if (step.state === null) kv.delete("m:snapshot");
    else kv.put("m:snapshot", step.state);
    if (step.installedLsn !== undefined) {
      this.appliedLsn = step.installedLsn;
      this.acks.rewound(step.installedLsn);
      this.log.restarted(step.installedLsn);
      this.rebuilding = false;
      this.diverged = null;
    }
    return { ...step.reply, appliedLsn: this.appliedLsn };
  }

  /** Checksums once this replica has applied `atLsn` (waits up to `waitMs`). */
  async checksums(node: string, atLsn: number, waitMs: number): Promise<NodeChecksums> {
    if (this.fault.stopped) throw new Error(`${node} is stopped`);
    const until = Date.now() + waitMs;
    while (this.appliedLsn < atLsn && Date.now() < until) await sleep(20);
    return nodeChecksums(this.node, node, this.appliedLsn);
  }

  /** Why this replica may serve no read now, or null. */
  private cannotServe(): string | null {
    if (this.fault.stopped) return "replica stopped";
    if (this.identity === "") return "replica not initialised";
    if (this.rebuilding) return "replica rebuilding from a snapshot";
    if (this.diverged !== null) return `replica diverged at LSN ${this.diverged.lsn}`;
    return null;
  }

  /**
   * How far this replica's log holds commits the cluster acknowledged (the
   * change stream's bound): its applied LSN, but not past the commit point the
   * master sent. A string when it may serve nothing.
   */
  acknowledgedThrough(): number | string {
    return this.cannotServe() ?? Math.min(this.appliedLsn, this.strongReads.commitPoint);
  }

  /** The node is deleted or reset into another role: nothing more runs on its storage. */
  close(): void {
    this.log.stop();
  }

  async appliedPosition(): Promise<{ appliedLsn: number; stopped: boolean }> {
    return { appliedLsn: this.appliedLsn, stopped: this.fault.stopped };
  }

  private setMeta(key: string, value: string): void {
    this.ctx.storage.kv.put(`m:${key}`, value);
    if (key === "identity") this.identity = value;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
