/**
 * The master: runs each write transaction atomically with its log append and
 * its saved result, assigns LSNs, ships the log through one relay per replica,
 * and answers a commit only when every replica of its wait set has acked it
 * (full sync). The rules live in core/ (ack book, guard, tunables); this class
 * wires them to storage, RPC and timers.
 */
import { DurableObject } from "cloudflare:workers";
import type { Outcome } from "../core/ack-book";
import { planWait } from "../core/commit-policy";
import { ApiError, type Result, fail, ok } from "../core/errors";
import { type VerifyReport, compareChecksums } from "../core/verify";
import {
  type ClusterStatus,
  type ExecRequest,
  type ExecResponse,
  type LogRecord,
  type AckRequest,
  type PullRequest,
  type PullResponse,
  type QueryRequest,
  type QueryResponse,
  MASTER_CRASH_REASON,
  replicaId,
  replicaObjectName,
} from "../core/protocol";
import { replicaSettings } from "../core/replica-settings";
import { Semaphore } from "../core/semaphore";
import { truncationPoint } from "../core/log-retention";
import {
  type TunableDescription,
  type TunableName,
  type Tunables,
  applyPatch,
  defaultTunables,
  describeTunables,
} from "../core/tunables";
import { migrate } from "../migrations";
import type { MessageFaultConfig } from "../core/message-faults";
import { MessageFaults } from "./fault-link";
import { MasterMetrics } from "./master-metrics";
import { MasterReadBarrier } from "./master-read-barrier";
import { MasterStore } from "./master-store";
import { Relay, type RelayHost, asAck } from "./relay";
import type { ReplicaDO } from "./replica";
import { type ReplicaEntry, ReplicaSet } from "./replica-set";
import { SnapshotSource } from "./snapshot-source";
import { type SnapshotProgress, emptyProgress, streamSnapshot } from "./snapshot-stream";
import { SyncModeSwitch } from "./sync-mode-switch";
import { TimedJobs } from "./timed-jobs";
import { type WaitPath, Waiter } from "./waiter";
import { LogTail, commitLocal } from "./master-commit";
import { syncCaptureTriggers } from "./sqlite/capture";
import { nodeChecksums } from "./sqlite/checksums";
import { runQuery } from "./sqlite/query";
import { Schema, type SqlNode } from "./sqlite/schema";
import { asSqlError } from "./sqlite/sql-errors";

const TAIL_CACHE_RECORDS = 4096;
const PRUNE_EVERY_MS = 60_000;
const SLOW_CHECK_EVERY_MS = 1_000;
const TRUNCATE_EVERY_MS = 1_000;
/** Log rows deleted per truncation step, so one step never blocks the master for long. */
const TRUNCATE_CHUNK_ROWS = 5_000;
const PULL_MAX_BYTES = 4_000_000;

export class MasterDO extends DurableObject<Env> {
  private cluster = "";
  private readonly store: MasterStore;
  private lsn = 0;
  /** Byte position of the end of the log (sum of record sizes ever appended). */
  private logEnd = 0;
  /** Log records through this LSN have been truncated. */
  private truncatedThrough = 0;
  private readonly snapshots: SnapshotSource;
  /** Each replica's snapshot streams: the current one and failures since the master started. */
  private readonly snapshotProgress = new Map<string, SnapshotProgress>();
  private currentTerm = 0;
  private tunables: Tunables = defaultTunables();
  private readonly writers = new Semaphore(8);
  private readonly replicas: ReplicaSet;
  private readonly tail = new LogTail(
    () => TAIL_CACHE_RECORDS,
    () => this.tunables.log_tail_bytes,
  );
  private readonly node: SqlNode;
  /** Highest LSN answered as acked: a replica must reach it before it is coherent again. */
  private answeredHighLsn = 0;
  private readonly jobs: TimedJobs;
  private readonly modeSwitch: SyncModeSwitch;
  private readonly counters = {
    commits: 0,
    replayed: 0,
    handedOff: 0,
    noWait: 0,
    inlineWaits: { off: 0, queueFull: 0, notPlain: 0 },
  };
  private readonly waiter: Waiter;
  private readonly strongReads: MasterReadBarrier;
  /** Test-only relay message faults (debug_fault_injection), and fault counts. */
  private readonly faults = new MessageFaults(
    () => this.tunables.debug_fault_injection,
    () => this.currentTerm,
  );

  private readonly metrics = new MasterMetrics(() => this.cluster, {
    outstanding: () => this.waiter.outstanding,
    writersBusy: () => this.writers.busy,
    lsn: () => this.lsn,
    replicas: () =>
      this.replicas.all().map((entry) => ({
        id: entry.id,
        lagMs: this.replicas.lagMs(entry, Date.now()),
        ackedLsn: entry.relay.ackedLsn,
        coherent: entry.state === "coherent",
      })),
  });

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new MasterStore(ctx.storage.kv);
    this.node = { sql: ctx.storage.sql, schema: new Schema(ctx.storage.sql) };
    this.snapshots = new SnapshotSource(ctx.storage, this.node, () => this.lsn);
    this.jobs = new TimedJobs(
      (at) => void ctx.storage.setAlarm(at),
      (job, now) => this.runJob(job, now),
    );
    this.replicas = new ReplicaSet({
      tunables: () => this.tunables,
      masterLsn: () => this.lsn,
      logEnd: () => this.logEnd,
      endOffsetAt: (lsn) => this.store.endOffsetAt(lsn),
      rejoinThreshold: () => this.coherencyThreshold(),
      leasesAllowed: () => this.modeSwitch.leasesAllowed(this.tunables.sync_mode),
      // A restarted master may have answered anything in its log (answeredHighLsn).
      leaseFloor: () => Math.max(this.strongReads.commitPoint, this.answeredHighLsn),
      leaseStore: this.store,
      joinWaits: (id, acked) => this.waiter.joinWaits(id, acked),
      saveState: (id, state, reason) => this.store.saveReplicaState(id, state, reason),
      marked: (id, reason) => {
        this.metrics.incoherentMarks.inc({ cluster: this.cluster, replica: id, reason });
      },
      requestPass: () => this.waiter.requestPass(),
    });
    this.strongReads = new MasterReadBarrier(this.replicas);
    this.waiter = new Waiter(this.replicas.view, {
      now: () => Date.now(),
      durableLsns: () => this.tunables.durable_lsns,
      markIncoherent: (ids) => {
        for (const id of ids) {
          const entry = this.replicas.get(id);
          if (entry !== undefined) this.replicas.markIncoherent(entry, "ack-timeout");
        }
      },
      wakeAt: (at) => (at === null ? this.jobs.cancel("waiter") : this.jobs.at("waiter", at)),
      answered: (lsn, outcome, path, waitedMs) => {
        if (outcome === "acked" && lsn > this.answeredHighLsn) this.answeredHighLsn = lsn;
        this.metrics.commitLatency.observe({ cluster: this.cluster, outcome, path }, waitedMs);
      },
      passed: (result) => {
        this.metrics.passes.inc({ cluster: this.cluster });
        this.metrics.passComparisons.inc({ cluster: this.cluster }, result.comparisons);
        this.metrics.skippedEarlyStop.inc({ cluster: this.cluster }, result.skippedEarlyStop);
      },
    });
    this.modeSwitch = new SyncModeSwitch(this.replicas, this.waiter, () => this.answeredHighLsn);
    ctx.blockConcurrencyWhile(async () => {
      migrate(ctx.storage);
      // Tables made before row capture existed get their capture triggers now.
      ctx.storage.transactionSync(() => syncCaptureTriggers(this.node.sql, this.node.schema));
      this.tunables = this.store.loadTunables();
      const faults = this.store.getMeta("message_faults");
      if (faults !== null) this.faults.configure(JSON.parse(faults) as MessageFaultConfig);
      this.writers.setLimit(this.tunables.writer_concurrency);
      this.lsn = this.store.lastLsn();
      this.truncatedThrough = Number(this.store.getMeta("truncated_through") ?? 0);
      this.snapshots.dropLeftovers();
      this.logEnd =
        this.store.endOffsetAt(this.lsn) || Number(this.store.getMeta("truncated_offset") ?? 0);
      // A previous incarnation may have answered anything in the log: a replica must
      // reach all of it before it may serve strong reads again.
      this.answeredHighLsn = this.lsn;
      this.currentTerm = Number(this.store.getMeta("term") ?? 0) + 1;
      this.store.setMeta("term", String(this.currentTerm));
      const cluster = this.store.getMeta("cluster");
      if (cluster !== null) this.startCluster(cluster);
    });
  }

  // ---------------------------------------------------------------- start-up

  private ensureCluster(cluster: string): void {
    if (this.cluster === cluster) return;
    if (this.cluster !== "") throw new Error(`master of ${this.cluster} asked for ${cluster}`);
    this.store.setMeta("cluster", cluster);
    this.startCluster(cluster);
  }

  private startCluster(cluster: string): void {
    this.cluster = cluster;
    this.relayHost.cluster = cluster;
    const now = Date.now();
    // The sanctioned replicas are the rows of _repl_replicas; a new cluster gets the default topology.
    let saved = this.store.loadReplicaStates();
    if (saved.size === 0 && this.store.getMeta("next_replica") === null) {
      const count = Math.max(0, Number.parseInt(this.env.DEFAULT_REPLICAS, 10) || 0);
      this.ctx.storage.transactionSync(() => {
        for (let i = 1; i <= count; i++) {
          // A new replica of a new cluster has applied nothing and nothing was committed.
          const state = this.lsn === 0 ? "coherent" : "incoherent";
          this.store.saveReplicaState(replicaId(i), state, state === "coherent" ? null : "new");
        }
        this.store.setMeta("next_replica", String(count + 1));
      });
      saved = this.store.loadReplicaStates();
    }
    const inherited = this.replicas.inheritedLeaseUntil(now);
    for (const [id, entry] of saved) {
      this.replicas.add(id, entry.state, entry.reason, new Relay(id, this.relayHost), inherited);
    }
    this.replicas.restoreRemoved(now);
    for (const entry of this.replicas.all()) entry.relay.pump();
    this.jobs.at("heartbeat", now + this.heartbeatEvery());
    this.jobs.at("slow-check", now + SLOW_CHECK_EVERY_MS);
    this.jobs.at("prune", now + this.pruneEvery());
    this.jobs.at("truncate", now + TRUNCATE_EVERY_MS);
  }

  // --------------------------------------------------------------- relays

  /** What relays may ask of the master (kept off the class so RPC does not expose it). */
  private readonly relayHost: RelayHost = {
    cluster: "",
    now: () => Date.now(),
    masterLsn: () => this.lsn,
    term: () => this.currentTerm,
    window: () => this.tunables.relay_window,
    callsInFlight: () => this.tunables.relay_calls_in_flight,
    batchMaxRecords: () => this.tunables.relay_batch_max_records,
    batchMaxBytes: () => this.tunables.relay_batch_max_bytes,
    heartbeatMs: () => this.tunables.heartbeat_ms,
    settings: () => replicaSettings(this.tunables),
    readLog: (fromLsn, maxRecords, maxBytes) => this.readLog(fromLsn, maxRecords, maxBytes),
    grantLease: (id, throughLsn) => this.replicas.grantLease(id, throughLsn),
    commitPoint: () => this.strongReads.current(),
    knownCommitPoint: () => this.strongReads.commitPoint,
    onAck: (id, response, rttMs, carried) => {
      if (carried) this.metrics.ackLatency.observe({ cluster: this.cluster, replica: id }, rttMs);
      this.replicas.onAck(id, rttMs, carried, response.ackDelayedMs);
    },
    onFailure: (id) => this.replicas.onFailure(id, Date.now()),
    newStub: (id) => this.replicaStub(id),
    append: (id, stub, request) => this.faults.append(id, stub, request),
    scheduleRestart: (id, at) => this.jobs.at(`relay-restart:${id}`, at),
    truncatedThrough: () => this.truncatedThrough,
    requestSnapshot: (id) => this.requestSnapshot(id),
    diverged: (id, at) => {
      const entry = this.replicas.get(id);
      if (entry === undefined) return;
      console.warn(`${this.cluster}/${id} diverged at LSN ${at.lsn}: ${at.detail}`);
      this.metrics.divergences.inc({ cluster: this.cluster, replica: id });
      this.replicas.markIncoherent(entry, "diverged");
      this.requestSnapshot(id);
    },
  };

  private readLog(fromLsn: number, maxRecords: number, maxBytes: number): LogRecord[] {
    const held = this.tail.read(fromLsn, maxRecords, maxBytes);
    if (held.length > 0) return held;
    return this.store.readLog(fromLsn, maxRecords, maxBytes);
  }

  private replicaStub(id: string): DurableObjectStub<ReplicaDO> {
    const ns = this.env.REPLICA as unknown as DurableObjectNamespace<ReplicaDO>;
    return ns.get(ns.idFromName(replicaObjectName(this.cluster, id)));
  }

  // ------------------------------------------------------------- coherency

  /**
   * A replica may rejoin the wait sets once it has applied every answered
   * commit and everything before the oldest commit still waiting: it then
   * joins the wait set of every waiting commit it has not acked.
   */
  private coherencyThreshold(): number {
    const oldest = this.waiter.oldestLsn();
    return Math.max(this.answeredHighLsn, oldest === null ? this.lsn : oldest - 1);
  }

  // ------------------------------------------------------------ waiting

  /** Snapshots the wait set and sanctioned set now, and holds the commit in the waiter. */
  private waitFor(lsn: number, path: WaitPath, bytes = 0): Promise<Outcome> {
    const now = Date.now();
    const waitSet = this.replicas.waitSetIds(now);
    const quorum =
      this.tunables.sync_mode === "quorum"
        ? Math.min(this.tunables.sync_quorum, waitSet.size)
        : undefined;
    return this.waiter.wait({
      lsn,
      waitSet,
      sanctioned: this.replicas.ids(),
      deadline: now + this.tunables.rep_timeout_ms,
      giveUpAt: now + this.tunables.commit_timeout_ms,
      ...(quorum === undefined ? {} : { quorum }),
      path,
      bytes,
    });
  }

  // ------------------------------------------------------------ timed jobs

  /** The one alarm entry: the durable backstop of the timed jobs. */
  override async alarm(): Promise<void> {
    this.jobs.onAlarm();
  }

  /**
   * Every timed job goes through one scheduler (TimedJobs): waiter deadlines,
   * heartbeats, relay restarts, the slow-replica check and pruning.
   */
  private runJob(job: string, now: number): void {
    if (job === "waiter") {
      this.waiter.pass();
      return;
    }
    if (job === "heartbeat") {
      for (const entry of this.replicas.all()) {
        entry.relay.heartbeatIfDue();
        entry.relay.pump();
        this.replicas.checkUnreachable(entry, now);
        this.replicas.checkLagging(entry, now);
        if (this.replicas.checkRejoin(entry)) this.waiter.requestPass();
      }
      this.replicas.purgeDeparted(now);
      this.jobs.at("heartbeat", now + this.heartbeatEvery());
      return;
    }
    if (job === "slow-check") {
      this.replicas.checkSlow();
      this.jobs.at("slow-check", now + SLOW_CHECK_EVERY_MS);
      return;
    }
    if (job === "prune") {
      // A result whose commit still waits for acks is kept whatever its age: its
      // client may be retrying right now.
      const waiting = this.waiter.oldestLsn();
      const answered = waiting === null ? this.lsn : waiting - 1;
      this.ctx.storage.transactionSync(() =>
        this.store.pruneResults(now - this.tunables.idempotency_retention_ms, answered),
      );
      this.jobs.at("prune", now + this.pruneEvery());
      return;
    }
    if (job === "truncate") {
      const more = this.truncateLog();
      this.jobs.at("truncate", now + (more ? 0 : TRUNCATE_EVERY_MS));
      return;
    }
    if (job.startsWith("relay-restart:")) {
      this.replicas.get(job.slice("relay-restart:".length))?.relay.retryNow();
    }
  }

  private heartbeatEvery(): number {
    return Math.max(5, Math.floor(this.tunables.heartbeat_ms / 2));
  }

  private pruneEvery(): number {
    return Math.min(PRUNE_EVERY_MS, this.tunables.idempotency_retention_ms);
  }

  // ------------------------------------------------------------ log retention

  /**
   * Truncates log records every replica has acked, keeping log_retain_records,
   * and never keeping more than log_max_records (a replica that needed those is
   * rebuilt from a snapshot). A snapshot in progress pins the records after it.
   * Returns whether more is left to truncate (one chunk per step).
   */
  private truncateLog(): boolean {
    const entries = this.replicas.all();
    const minAcked = entries.reduce((m, e) => Math.min(m, e.relay.ackedLsn), this.lsn);
    const target = truncationPoint({
      lsn: this.lsn,
      minAckedLsn: minAcked,
      retain: this.tunables.log_retain_records,
      max: this.tunables.log_max_records,
      pinnedLsn: this.snapshots.lsn,
    });
    if (target <= this.truncatedThrough) return false;
    const through = Math.min(target, this.truncatedThrough + TRUNCATE_CHUNK_ROWS);
    this.ctx.storage.transactionSync(() => {
      this.store.setMeta("truncated_offset", String(this.store.endOffsetAt(through)));
      this.store.deleteLog(this.truncatedThrough, through);
      this.store.setMeta("truncated_through", String(through));
    });
    this.truncatedThrough = through;
    this.tail.dropThrough(through);
    // The log passed a snapshot still streaming: it can no longer be caught up
    // from, so it goes, and its replicas take a new one.
    const pinned = this.snapshots.lsn;
    if (pinned !== null && pinned < through) this.snapshots.abandon();
    return through < target;
  }

  /** A replica needs records that are truncated: rebuild it from a snapshot. */
  private requestSnapshot(id: string): void {
    const entry = this.replicas.get(id);
    if (entry === undefined || entry.relay.snapshotting) return;
    this.replicas.markIncoherent(entry, "rebuild");
    entry.relay.startSnapshot();
    this.ctx.waitUntil(this.streamSnapshot(id));
  }

  private async streamSnapshot(id: string): Promise<void> {
    const entry = this.replicas.get(id);
    if (entry === undefined) return;
    let progress = this.snapshotProgress.get(id);
    if (progress === undefined) {
      progress = emptyProgress();
      this.snapshotProgress.set(id, progress);
    }
    const failures = progress.failures;
    await streamSnapshot(this.snapshots, entry.relay, progress, () => {
      this.replicas.onAck(id, 0, false, 0);
    });
    if (progress.failures > failures) {
      this.metrics.snapshotFailures.inc({ cluster: this.cluster, replica: id });
    }
  }

  // ------------------------------------------------------------ writes

  async exec(request: ExecRequest): Promise<Result<ExecResponse>> {
    try {
      this.ensureCluster(request.cluster);
      const key = request.idempotencyKey;
      const hash = request.requestHash ?? "";
      // A retry is looked up before anything else runs: a commit the guard would
      // refuse today (after a deploy) is still answered with its saved result.
      if (key !== undefined) {
        const saved = this.store.findResult(key);
        if (saved !== null) return await this.replay(saved, hash);
      }
      // Only a request that queued for its slot can find its key committed meanwhile.
      const queued = !this.writers.tryAcquire();
      if (queued) await this.writers.acquire();
      let holding = true;
      try {
        if (key !== undefined && queued) {
          // A duplicate may have committed while this request queued for a slot.
          const saved = this.store.findResult(key);
          if (saved !== null) {
            this.writers.release();
            holding = false;
            return await this.replay(saved, hash);
          }
        }
        const { response, plain, bytes } = this.commit(request, key, hash);
        const plan = planWait({
          syncMode: this.tunables.sync_mode,
          asyncDistCommit: this.tunables.async_dist_commit,
          maxOutstanding: this.tunables.async_dist_commit_max_outstanding,
          handedOffNow: this.waiter.handedOffNow + this.waiter.replaysNow,
          plain,
          heldBytes: this.waiter.heldBytes,
          bytes,
          maxHeldBytes: this.tunables.waiter_max_held_bytes,
        });
        if (plan.kind === "no-wait") {
          this.counters.noWait++;
          if (response.lsn > this.answeredHighLsn) this.answeredHighLsn = response.lsn;
          return ok(response);
        }
        if (plan.kind === "inline") {
          this.counters.inlineWaits[plan.reason]++;
          this.metrics.inlineWaits.inc({ cluster: this.cluster, reason: plan.reason });
        } else {
          this.counters.handedOff++;
          this.metrics.handoffs.inc({ cluster: this.cluster });
          this.writers.release();
          holding = false;
        }
        const outcome = await this.waitFor(response.lsn, plan.kind, bytes);
        return this.answer(outcome, response);
      } finally {
        if (holding) this.writers.release();
      }
    } catch (error) {
      const mapped = asSqlError(error);
      if (mapped instanceof ApiError) return this.failed(this.forRoute(mapped, request));
      throw error;
    }
  }

  private failed<T>(error: ApiError): Result<T> {
    this.metrics.errors.inc({ cluster: this.cluster, code: error.code });
    return fail(error);
  }

  private forRoute(error: ApiError, request: ExecRequest): ApiError {
    if (request.kind === "rows" && /no such table/i.test(error.message)) {
      return new ApiError("NOT_FOUND", error.message.replace(/^.*no such table/i, "no such table"));
    }
    return error;
  }

  private async replay(
    saved: { lsn: number; requestHash: string; response: string },
    hash: string,
  ): Promise<Result<ExecResponse>> {
    if (saved.requestHash !== hash) {
      return this.failed(
        new ApiError(
          "IDEMPOTENCY_KEY_REUSED",
          "this Idempotency-Key was used with a different request body",
        ),
      );
    }
    this.counters.replayed++;
    this.metrics.replayed.inc({ cluster: this.cluster });
    const response = JSON.parse(saved.response) as ExecResponse;
    const bytes = saved.response.length;
    const full =
      this.waiter.handedOffNow + this.waiter.replaysNow >=
        this.tunables.async_dist_commit_max_outstanding ||
      this.waiter.heldBytes + bytes > this.tunables.waiter_max_held_bytes;
    // A replay of a commit that may still wait holds its response in the waiter too:
    // past the waiter's caps it is turned away rather than held.
    if (full && saved.lsn > this.answeredHighLsn) {
      return this.failed(
        new ApiError("UNAVAILABLE", "the waiter holds as many answers as it may; retry", {
          retryAfterSeconds: 1,
        }),
      );
    }
    const outcome =
      this.tunables.sync_mode === "none" ? "acked" : await this.waitFor(saved.lsn, "replay", bytes);
    return this.answer(outcome, { ...response, replayed: true });
  }

  private answer(outcome: Outcome, response: ExecResponse): Result<ExecResponse> {
    if (outcome === "acked") return ok(response);
    if (outcome === "not-durable") {
      return this.failed(
        new ApiError(
          "NOT_DURABLE",
          "the commit was not acknowledged by a majority of the cluster in time; retry with the same Idempotency-Key",
          { lsn: response.lsn, retryAfterSeconds: 1 },
        ),
      );
    }
    return this.failed(
      new ApiError(
        "COMMIT_TIMEOUT",
        "the commit is written on the master but was not acknowledged in time; retry with the same Idempotency-Key",
        { lsn: response.lsn },
      ),
    );
  }

  /** Runs the statements, appends the log record and saves the result: one transaction. */
  private commit(
    request: ExecRequest,
    key: string | undefined,
    hash: string,
  ): { response: ExecResponse; plain: boolean; bytes: number } {
    const lsn = this.lsn + 1;
    const { response, record, bytes, responseBytes } = commitLocal(
      this.ctx.storage,
      this.node,
      this.store,
      {
        lsn,
        term: this.currentTerm,
        logEnd: this.logEnd,
        statements: request.statements,
        format: request.format ?? "objects",
        key,
        requestHash: hash,
        statementMinRows: this.tunables.replicate_statement_min_rows,
        recordMaxBytes: this.tunables.log_record_max_bytes,
      },
    );
    this.lsn = lsn;
    this.logEnd += bytes;
    this.counters.commits++;
    this.metrics.commits.inc({ cluster: this.cluster });
    this.tail.add(record, bytes);
    for (const entry of this.replicas.all()) entry.relay.pump();
    return {
      response,
      plain: record.entries.every((e) => e.kind !== "ddl"),
      bytes: responseBytes,
    };
  }

  /** A replica's deferred ack (debug_ack_delay_ms). */
  async ack(request: AckRequest): Promise<void> {
    this.ensureCluster(request.cluster);
    this.replicas.get(request.replicaId)?.relay.receiveAck(asAck(request));
  }

  /** A replica catching up fetches the next records; its `fromLsn` acks everything before. */
  async pullLog(request: PullRequest): Promise<PullResponse> {
    this.ensureCluster(request.cluster);
    const entry = this.replicas.get(request.replicaId);
    if (entry === undefined) throw new Error(`no replica ${request.replicaId}`);
    entry.relay.pullBatches++;
    if (request.fromLsn <= this.truncatedThrough) {
      this.requestSnapshot(entry.id);
      return { records: [], masterLsn: this.lsn, caughtUp: false, snapshot: true };
    }
    entry.relay.noteApplied(request.fromLsn - 1);
    this.replicas.onAck(entry.id, 0, false, 0);
    const maxRecords = Math.max(1, Math.min(request.maxRecords, 10_000));
    const records = this.store.readLog(request.fromLsn, maxRecords, PULL_MAX_BYTES);
    const through = records[records.length - 1]?.lsn ?? request.fromLsn - 1;
    const caughtUp = through >= this.lsn;
    if (caughtUp) entry.relay.resumeLive(through);
    return { records, masterLsn: this.lsn, caughtUp };
  }

  // ------------------------------------------------------------ reads

  async query(request: QueryRequest): Promise<Result<QueryResponse>> {
    try {
      this.ensureCluster(request.cluster);
      const result = runQuery(this.node, request.sql, request.params, request.format);
      // The rows are the state at this LSN; a strong read answers once it is acknowledged.
      const appliedLsn = this.lsn;
      if (request.consistency === "strong") await this.strongReads.settle(appliedLsn);
      return ok({ ...result, servedBy: "master", appliedLsn });
    } catch (error) {
      if (error instanceof ApiError) return fail(error);
      throw error;
    }
  }

  // ------------------------------------------------------------ admin

  async status(cluster: string): Promise<ClusterStatus> {
    this.ensureCluster(cluster);
    const now = Date.now();
    const replicas = this.replicas.status(now).map((status) => ({
      ...status,
      snapshot: this.snapshotProgress.get(status.id) ?? emptyProgress(),
    }));
    const truncatedOffset = Number(this.store.getMeta("truncated_offset") ?? 0);
    const log = { rows: this.lsn - this.truncatedThrough, bytes: this.logEnd - truncatedOffset };
    return {
      cluster: this.cluster,
      master: {
        lsn: this.lsn,
        term: this.currentTerm,
        writersBusy: this.writers.busy,
        writersQueued: this.writers.queued,
        waiter: {
          outstanding: this.waiter.outstanding,
          handedOffNow: this.waiter.handedOffNow,
          peakOutstanding: this.waiter.peak,
          passes: this.waiter.passes,
          checked: this.waiter.checked,
          answered: this.waiter.answered,
          comparisons: this.waiter.comparisons,
          skippedEarlyStop: this.waiter.skippedEarlyStop,
          noWait: this.counters.noWait,
          handedOff: this.counters.handedOff,
          inlineWaits: { ...this.counters.inlineWaits },
        },
        commits: this.counters.commits,
        replayed: this.counters.replayed,
        logRows: log.rows,
        logBytes: log.bytes,
        truncatedThrough: this.truncatedThrough,
        ...this.strongReads.status(),
      },
      replicas,
      faults: { messages: this.faults.current, injected: { ...this.faults.injected } },
    };
  }

  async metricsText(cluster: string): Promise<string> {
    this.ensureCluster(cluster);
    return this.metrics.render();
  }

  async getTunables(cluster: string): Promise<Record<TunableName, TunableDescription>> {
    this.ensureCluster(cluster);
    return describeTunables(this.tunables);
  }

  async patchTunables(
    cluster: string,
    patch: unknown,
  ): Promise<Result<Record<TunableName, TunableDescription>>> {
    try {
      this.ensureCluster(cluster);
      const { next, changed } = applyPatch(this.tunables, patch);
      const values: Record<string, unknown> = {};
      for (const name of changed) values[name] = next[name];
      const from = this.tunables.sync_mode;
      await this.modeSwitch.before(from, next.sync_mode);
      this.ctx.storage.transactionSync(() => this.store.saveTunables(values));
      this.tunables = next;
      this.writers.setLimit(next.writer_concurrency);
      this.modeSwitch.after(from, next.sync_mode);
      // Periodic jobs take a changed period from now, not after the old one runs out.
      const now = Date.now();
      if (changed.includes("heartbeat_ms")) this.jobs.at("heartbeat", now + this.heartbeatEvery());
      if (changed.includes("idempotency_retention_ms")) {
        this.jobs.at("prune", now + this.pruneEvery());
      }
      // Replicas read their settings from every message: a heartbeat carries the change now.
      for (const entry of this.replicas.all()) entry.relay.heartbeatIfDue();
      return ok(describeTunables(next));
    } catch (error) {
      if (error instanceof ApiError) return fail(error);
      throw error;
    }
  }

  async verify(cluster: string): Promise<VerifyReport> {
    this.ensureCluster(cluster);
    const lsn = this.lsn;
    const mine = nodeChecksums(this.node, "master", lsn);
    const others = await Promise.all(
      this.replicas.ids().map(async (id) => {
        try {
          return await this.replicaStub(id).checksums(id, lsn, 10_000);
        } catch (error) {
          return { node: id, error: error instanceof Error ? error.message : String(error) };
        }
      }),
    );
    return compareChecksums(mine, others);
  }

  // ------------------------------------------------------------ faults

  private requireFaults(): void {
    if (!this.tunables.debug_fault_injection) {
      throw new ApiError(
        "FORBIDDEN",
        "fault injection is off: set the tunable debug_fault_injection to true first",
      );
    }
  }

  async crash(cluster: string): Promise<Result<{ crashed: true }>> {
    return this.faultRoute(cluster, async () => {
      // Resets the object now: the requests in flight fail, and this call throws
      // MASTER_CRASH_REASON to its caller (a reset from a timer after the reply
      // could land seconds late under load, after the writes it was meant to hit).
      this.ctx.abort(MASTER_CRASH_REASON);
      return { crashed: true as const };
    });
  }

  async setReplicaStopped(
    cluster: string,
    id: string,
    stopped: boolean,
  ): Promise<Result<{ id: string; stopped: boolean }>> {
    return this.faultHook(cluster, id, async (entry) => {
      await this.replicaStub(id).setStopped(stopped);
      if (!stopped) entry.relay.retryNow();
      return { id, stopped };
    });
  }

  /** Fault hook: cut or restore the master's link to one replica (no call to it is made). */
  async setReplicaDisconnected(
    cluster: string,
    id: string,
    disconnected: boolean,
  ): Promise<Result<{ id: string; disconnected: boolean }>> {
    return this.faultHook(cluster, id, async (entry) => {
      entry.relay.setDisconnected(disconnected);
      return { id, disconnected };
    });
  }

  /** Fault hook: crash a replica now, or partway through the next batch it applies. */
  async crashReplica(
    cluster: string,
    id: string,
    midBatch: boolean,
  ): Promise<Result<{ id: string; midBatch: boolean }>> {
    return this.faultHook(cluster, id, async () => {
      await this.replicaStub(id).crash(midBatch);
      this.faults.injected.replicaCrash++;
      return { id, midBatch };
    });
  }

  /** Fault hook: drop, delay, duplicate or reorder relay messages (seeded); all 0 heals. */
  async setMessageFaults(
    cluster: string,
    config: MessageFaultConfig,
  ): Promise<Result<{ messages: MessageFaultConfig }>> {
    return this.faultRoute(cluster, async () => {
      this.store.setMeta("message_faults", JSON.stringify(config));
      this.faults.configure(config);
      return { messages: config };
    });
  }

  async setReplicaDelay(
    cluster: string,
    id: string,
    ms: number,
  ): Promise<Result<{ id: string; delayMs: number }>> {
    return this.faultHook(cluster, id, async () => {
      await this.replicaStub(id).setFaultDelay(ms);
      return { id, delayMs: ms };
    });
  }

  // ------------------------------------------------------------ membership

  /**
   * Adds a replica to the sanctioned set (ids are never reused). It starts
   * incoherent and is bootstrapped from a snapshot, then rejoins once caught up.
   */
  async addReplica(cluster: string): Promise<{ id: string; replicas: string[] }> {
    this.ensureCluster(cluster);
    const next = Number(this.store.getMeta("next_replica") ?? "1");
    const id = replicaId(next);
    this.ctx.storage.transactionSync(() => {
      this.store.saveReplicaState(id, "incoherent", "new");
      this.store.setMeta("next_replica", String(next + 1));
    });
    this.replicas.add(id, "incoherent", "new", new Relay(id, this.relayHost), 0);
    if (this.lsn > 0) this.requestSnapshot(id);
    else this.replicas.get(id)?.relay.pump();
    return { id, replicas: this.replicas.ids() };
  }

  /**
   * Removes a replica from the sanctioned set at once. Commits already waiting
   * keep the wait set they started with; the removed replica leaves it like any
   * incoherent one, once the lease it may hold has expired.
   */
  async removeReplica(
    cluster: string,
    id: string,
  ): Promise<Result<{ id: string; replicas: string[] }>> {
    try {
      this.ensureCluster(cluster);
      const entry = this.replicas.get(id);
      if (entry === undefined) throw new ApiError("NOT_FOUND", `no replica ${id} in ${cluster}`);
      this.replicas.markIncoherent(entry, "removed");
      this.replicas.remove(id);
      entry.relay.retire();
      this.store.deleteReplica(id);
      this.waiter.requestPass();
      return ok({ id, replicas: this.replicas.ids() });
    } catch (error) {
      if (error instanceof ApiError) return fail(error);
      throw error;
    }
  }

  /** Fault hook: run SQL on one replica outside the log (it should then diverge). */
  async tamperReplica(
    cluster: string,
    id: string,
    sql: string,
  ): Promise<Result<{ id: string; tampered: true }>> {
    return this.faultHook(cluster, id, async () => {
      await this.replicaStub(id).tamper(sql);
      return { id, tampered: true as const };
    });
  }

  /** Fault hook: make a relay resend from `lsn + 1` (its replica skips what it has). */
  async rewindRelay(cluster: string, id: string, lsn: number): Promise<Result<{ id: string }>> {
    return this.faultHook(cluster, id, async (entry) => {
      entry.relay.rewind(lsn);
      return { id };
    });
  }

  /** A fault route: refused unless debug_fault_injection is on; API errors become results. */
  private async faultRoute<T>(cluster: string, act: () => Promise<T>): Promise<Result<T>> {
    try {
      this.ensureCluster(cluster);
      this.requireFaults();
      return ok(await act());
    } catch (error) {
      if (error instanceof ApiError) return fail(error);
      throw error;
    }
  }

  /** A fault route aimed at one replica. */
  private faultHook<T>(
    cluster: string,
    id: string,
    act: (entry: ReplicaEntry) => Promise<T>,
  ): Promise<Result<T>> {
    return this.faultRoute(cluster, () => {
      const entry = this.replicas.get(id);
      if (entry === undefined) throw new ApiError("NOT_FOUND", `no replica ${id} in ${cluster}`);
      return act(entry);
    });
  }

  replicaIds(cluster: string): string[] {
    this.ensureCluster(cluster);
    return this.replicas.ids();
  }
}
