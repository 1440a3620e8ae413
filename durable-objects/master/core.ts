/**
 * The master role's state and wiring: the log position, the replica set with a
 * relay per replica, the waiter, the read barrier and the timed jobs, tied to
 * one node's storage. The role's entry points (writes, admin, faults, jobs)
 * are in modules of their own and work on this; the rules they apply live in
 * core/ (ack book, commit policy, tunables).
 */
import type { Outcome } from "../../core/ack-book";
import { FIRST_MASTER } from "../../core/members";
import type { MessageFaultConfig } from "../../core/message-faults";
import { type Locations, locationsFromStored } from "../../core/placement";
import type { LogRecord } from "../../core/protocol";
import { replicaSettings } from "../../core/replica-settings";
import { Semaphore } from "../../core/semaphore";
import { defaultTunables, type Tunables } from "../../core/tunables";
import { type NodeStub, nodeStub } from "../node-rpc";
import type { NodeStore } from "../node-store";
import type { SqlNode } from "../sqlite/schema";
import { ApiError } from "../../core/errors";
import { AckedMemory } from "./acked-memory";
import { maxLeaseMs, publishConfig } from "./config";
import { seedDefaultTopology } from "./default-topology";
import { LogTail, commitEmpty } from "./commit";
import { MessageFaults } from "./fault-link";
import { MasterIdle } from "./idle";
import { MasterMetrics } from "./metrics";
import { MasterReadBarrier } from "./read-barrier";
import { Relay, type RelayHost } from "./relay";
import { ReplicaSet } from "./replica-set";
import { SnapshotSource } from "./snapshot-source";
import { type SnapshotProgress, SnapshotStreams } from "./snapshot-stream";
import { SyncModeSwitch } from "./sync-mode-switch";
import { TimedJobs } from "./timed-jobs";
import { Waiter, type WaitPath } from "./waiter";

const TAIL_CACHE_RECORDS = 4096;
const PRUNE_EVERY_MS = 60_000;
export const SLOW_CHECK_EVERY_MS = 1_000;
export const TRUNCATE_EVERY_MS = 1_000;

export type JobRunner = (core: MasterCore, job: string, now: number) => void;

export class MasterCore {
  cluster = "";
  lsn = 0;
  /** Byte position of the end of the log (sum of record sizes ever appended). */
  logEnd = 0;
  /** Log records through this LSN have been truncated. */
  truncatedThrough = 0;
  /** The cluster's term: which master's reign this is (changes only with the directory). */
  term = 1;
  /** Incarnations of this master since its storage was created (a restart adds one). */
  epoch = 0;
  tunables: Tunables = defaultTunables();
  /** Highest LSN answered as acked: a replica must reach it before it is coherent again. */
  answeredHighLsn = 0;
  /** This master's member id. */
  self = FIRST_MASTER;
  /** The LSN of this term's first record (its PROMOTE record; 1 in the first term). */
  termStartLsn = 1;
  /**
   * Set while a handover runs or once this master stepped down: no new commit,
   * membership or tunables change is taken, so the log stays where it is.
   */
  frozen: string | null = null;
  /** Halted for a deletion of the cluster: it writes nothing more to its storage. */
  private deleted = false;
  readonly snapshots: SnapshotSource;
  /** Each replica's snapshot streams: the current one and failures since the master started. */
  readonly snapshotProgress = new Map<string, SnapshotProgress>();
  readonly writers = new Semaphore(8);
  /** One change at a time to what the directory's config holds (configChange). */
  private readonly configLock = new Semaphore(1);
  readonly snapshotStreams: SnapshotStreams;
  readonly replicas: ReplicaSet;
  readonly tail = new LogTail(
    () => TAIL_CACHE_RECORDS,
    () => this.tunables.log_tail_bytes,
  );
  readonly jobs: TimedJobs;
  readonly modeSwitch: SyncModeSwitch;
  readonly counters = {
    commits: 0,
    replayed: 0,
    handedOff: 0,
    noWait: 0,
    inlineWaits: { off: 0, queueFull: 0, notPlain: 0 },
  };
  readonly waiter: Waiter;
  readonly strongReads: MasterReadBarrier;
  /** Test-only relay message faults (debug_fault_injection), and fault counts. */
  readonly faults = new MessageFaults(
    () => this.tunables.debug_fault_injection,
    () => this.epoch,
    () => this.tunables.debug_link_delay_ms,
  );
  readonly metrics: MasterMetrics;
  /** Each replica's highest acked LSN, kept across restarts for status and /metrics (saved by them). */
  readonly ackedMemory: AckedMemory;
  /** Sleep and wake (scale to zero): the heartbeat job puts it to sleep, a request wakes it. */
  readonly idle = new MasterIdle((now) => {
    this.replicas.woke(now);
    this.startJobs(now);
  });

  constructor(
    readonly ctx: DurableObjectState,
    readonly env: Env,
    readonly node: SqlNode,
    readonly store: NodeStore,
    runJob: JobRunner,
    /** The node resets and starts again in the role its storage says. */
    private readonly restartNode: (reason: string) => void,
    /** Fault hook: the node is cut off from the other members; its relays' calls fail. */
    private readonly partitioned: () => boolean = () => false,
  ) {
    this.ackedMemory = new AckedMemory(
      store,
      () => this.term,
      () => this.replicas.all().map((entry) => entry.relay),
    );
    this.snapshots = new SnapshotSource(
      ctx.storage,
      node,
      () => this.lsn,
      () => this.logEnd,
      (lsn) => this.store.termAt(lsn),
    );
    this.jobs = new TimedJobs(
      (at) => void ctx.storage.setAlarm(at),
      (job, now) => runJob(this, job, now),
      () => void ctx.storage.deleteAlarm(),
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
    this.snapshotStreams = new SnapshotStreams({
      ctx,
      source: this.snapshots,
      replicas: this.replicas,
      store,
      progress: this.snapshotProgress,
      term: () => this.term,
      failed: (id) => this.metrics.snapshotFailures.inc({ cluster: this.cluster, replica: id }),
    });
    this.metrics = new MasterMetrics(() => this.cluster, {
      outstanding: () => this.waiter.outstanding,
      writersBusy: () => this.writers.busy,
      lsn: () => this.lsn,
      asleep: () => this.idle.asleep,
      replicas: () =>
        this.replicas.all().map((entry) => ({
          id: entry.id,
          lagMs: this.replicas.lagMs(entry, Date.now()),
          ackedLsn: entry.relay.highestAckedLsn,
          coherent: entry.state === "coherent",
        })),
    });
    this.waiter = new Waiter(this.replicas.view, {
      now: () => Date.now(),
      durableLsns: () => this.tunables.durable_lsns,
      sanctioned: () => this.replicas.ids(),
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
  }

  /** Loads what a master keeps in its storage; called once, inside blockConcurrencyWhile. */
  load(): void {
    const store = this.store;
    this.tunables = store.loadTunables();
    const faults = store.getMeta("message_faults");
    if (faults !== null) this.faults.configure(JSON.parse(faults) as MessageFaultConfig);
    this.writers.setLimit(this.tunables.writer_concurrency);
    this.lsn = store.lastLsn();
    this.truncatedThrough = Number(store.getMeta("truncated_through") ?? 0);
    this.snapshots.dropLeftovers();
    this.logEnd = store.endOffsetAt(this.lsn) || Number(store.getMeta("truncated_offset") ?? 0);
    // A previous incarnation may have answered anything in the log: a replica must
    // reach all of it before it may serve strong reads again.
    this.answeredHighLsn = this.lsn;
    this.term = Number(store.getMeta("term") ?? 1);
    this.self = store.getMeta("member") ?? FIRST_MASTER;
    this.relayHost.self = this.self;
    this.termStartLsn = Number(store.getMeta("term_start") ?? 1);
    this.epoch = Number(store.getMeta("epoch") ?? 0) + 1;
    store.setMeta("epoch", String(this.epoch));
    const cluster = store.getMeta("cluster");
    // A promoted master's first record of its term (Tarantool's PROMOTE): the
    // term's place in the log, which every replica sees before any commit of it.
    // The first term has none: it starts with the cluster.
    if (store.getMeta("term_start") !== null && this.lsn < this.termStartLsn) {
      this.commitTermStart();
    }
    if (cluster !== null) this.startCluster(cluster);
  }

  private commitTermStart(): void {
    const { record, bytes } = commitEmpty(this.ctx.storage, this.node, this.store, {
      lsn: this.lsn + 1,
      term: this.term,
      logEnd: this.logEnd,
    });
    this.lsn = record.lsn;
    this.logEnd += bytes;
    this.tail.add(record, bytes);
  }

  /** Why a write (or a membership or tunables change) is refused now, if it is. */
  writeRefusal(): ApiError | null {
    if (this.frozen === null) return null;
    return new ApiError("UNAVAILABLE", `the master is not taking writes: ${this.frozen}; retry`, {
      retryAfterSeconds: 1,
    });
  }

  /**
   * A higher term has another master: take nothing more, send nothing more, and
   * persist the replica role (the node restarts into it, `onStepDown`).
   */
  stepDown(term: number): void {
    if (this.frozen?.startsWith("stepped down")) return;
    // Its storage is being emptied: a role written now would outlive the deletion.
    if (this.deleted) return;
    this.frozen = `stepped down: term ${term} has another master`;
    for (const entry of this.replicas.all()) entry.relay.retire();
    this.jobs.cancelAll();
    this.ctx.storage.transactionSync(() => {
      this.store.setMeta("role", "replica");
      this.store.setMeta("term", String(Math.max(term, this.term)));
      // Its log is checked against the new term's first LSN when that term's master writes.
      this.store.setMeta("term_checked", String(this.term));
    });
    this.restartNode(this.frozen);
  }

  /** Takes nothing more and resets the node, which starts again in its stored role. */
  restart(reason: string): void {
    this.halt(`restarting: ${reason}`);
    this.restartNode(reason);
  }

  /** Takes nothing more, sends nothing more and runs no job (a restart, a deletion). */
  halt(reason: string, deleting = false): void {
    if (deleting) this.deleted = true;
    this.frozen = reason;
    for (const entry of this.replicas.all()) entry.relay.retire();
    this.jobs.cancelAll();
  }

  ensureCluster(cluster: string): void {
    if (this.cluster === cluster) return;
    if (this.cluster !== "") throw new Error(`master of ${this.cluster} asked for ${cluster}`);
    this.store.setMeta("cluster", cluster);
    this.startCluster(cluster);
  }

  private startCluster(cluster: string): void {
    this.cluster = cluster;
    this.relayHost.cluster = cluster;
    const now = Date.now();
    // The sanctioned replicas are the `s:` rows; a new cluster gets the default topology.
    seedDefaultTopology(this.env, this.ctx.storage, this.store, this.lsn);
    const saved = this.store.loadReplicaStates();
    const inherited = this.replicas.inheritedLeaseUntil(now);
    this.ackedMemory.load();
    for (const [id, entry] of saved) {
      const relay = new Relay(id, this.relayHost);
      this.ackedMemory.seed(relay);
      this.replicas.add(id, entry.state, entry.reason, relay, inherited);
    }
    this.replicas.restoreRemoved(now);
    this.startJobs(now);
    // What a promotion without this master would need, in the directory from the start.
    this.ctx.waitUntil(
      this.configChange(() => this.publishConfig()).catch((error: unknown) => {
        console.warn(`${cluster}: config not published in the directory`, error);
      }),
    );
  }

  /** The periodic jobs, at start and on waking; the relays send what they have. */
  private startJobs(now: number): void {
    for (const entry of this.replicas.all()) entry.relay.pump();
    this.jobs.at("heartbeat", now + this.heartbeatEvery());
    this.jobs.at("slow-check", now + SLOW_CHECK_EVERY_MS);
    this.jobs.at("prune", now + this.pruneEvery());
    this.jobs.at("truncate", now + TRUNCATE_EVERY_MS);
  }

  /** What relays may ask of the master. */
  readonly relayHost: RelayHost = {
    cluster: "",
    self: FIRST_MASTER,
    now: () => Date.now(),
    masterLsn: () => this.lsn,
    term: () => this.term,
    window: () => this.tunables.relay_window,
    callsInFlight: () => this.tunables.relay_calls_in_flight,
    callGapMs: () => this.tunables.relay_call_gap_ms,
    batchMaxRecords: () => this.tunables.relay_batch_max_records,
    batchMaxBytes: () => this.tunables.relay_batch_max_bytes,
    heartbeatMs: () => this.tunables.heartbeat_ms,
    settings: () => replicaSettings(this.tunables),
    readLog: (fromLsn, maxRecords, maxBytes) => this.readLog(fromLsn, maxRecords, maxBytes),
    termAt: (lsn) => this.tail.termAt(lsn) ?? this.store.termAt(lsn),
    grantLease: (id, throughLsn) => this.replicas.grantLease(id, throughLsn),
    commitPoint: () => this.strongReads.current(),
    knownCommitPoint: () => this.strongReads.commitPoint,
    onAck: (id, response, rttMs, carried) => {
      if (carried) this.metrics.ackLatency.observe({ cluster: this.cluster, replica: id }, rttMs);
      this.replicas.onAck(id, rttMs, carried, response.ackDelayedMs);
    },
    onFailure: (id) => this.replicas.onFailure(id, Date.now()),
    newStub: (id) => this.replicaStub(id),
    append: (id, stub, request) =>
      this.partitioned()
        ? Promise.reject(
            new Error(`${this.self} is partitioned from the cluster (fault injection)`),
          )
        : this.faults.append(id, stub, request),
    scheduleRestart: (id, at) => this.jobs.at(`relay-restart:${id}`, at),
    truncatedThrough: () => this.truncatedThrough,
    requestSnapshot: (id) => this.requestSnapshot(id),
    termStartLsn: () => this.termStartLsn,
    superseded: (term) => this.stepDown(term),
    diverged: (id, at) => {
      const entry = this.replicas.get(id);
      if (entry === undefined) return;
      console.warn(`${this.cluster}/${id} diverged at LSN ${at.lsn}: ${at.detail}`);
      this.metrics.divergences.inc({ cluster: this.cluster, replica: id });
      this.replicas.markIncoherent(entry, "diverged");
      this.requestSnapshot(id);
    },
  };

  readLog(fromLsn: number, maxRecords: number, maxBytes: number): LogRecord[] {
    const held = this.tail.read(fromLsn, maxRecords, maxBytes);
    if (held.length > 0) return held;
    return this.store.readLog(fromLsn, maxRecords, maxBytes);
  }

  /** Each member's location hint (core/placement.ts), as the membership records it. */
  locations(): Locations {
    return locationsFromStored(this.store.getMeta("locations"));
  }

  replicaStub(id: string): NodeStub {
    return nodeStub(this.env, this.cluster, id, this.locations()[id]);
  }

  /**
   * A replica may rejoin the wait sets once it has applied every answered
   * commit and everything before the oldest commit still waiting: it then
   * joins the wait set of every waiting commit it has not acked.
   */
  coherencyThreshold(): number {
    const oldest = this.waiter.oldestLsn();
    return Math.max(this.answeredHighLsn, oldest === null ? this.lsn : oldest - 1);
  }

  /**
   * Snapshots the wait set and sanctioned set now, and holds the commit in the
   * waiter. A commit of an earlier term (a retry answered from a record this
   * master inherited) counts as acknowledged only once this term's first
   * record is on the nodes too (Raft's rule for entries of earlier terms): a
   * later promotion that prefers the node with the newest term then cannot
   * pick one that lacks it.
   */
  waitFor(committedLsn: number, path: WaitPath, bytes = 0): Promise<Outcome> {
    const lsn = Math.max(committedLsn, this.termStartLsn);
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

  /** A replica needs records that are truncated, or diverged: rebuild it from a snapshot. */
  requestSnapshot(id: string): void {
    this.snapshotStreams.request(id);
  }

  /**
   * Runs a change to the membership, the tunables or the faults (each
   * publishes the config, then applies it) or a handover, one at a time: two
   * of them interleaved around the directory's await would publish or apply
   * each other's stale view (a replica added twice under one id, a live
   * member missing from the directory, a replica added during a handover
   * that the new master never hears of).
   */
  async configChange<T>(change: () => Promise<T>): Promise<T> {
    await this.configLock.acquire();
    try {
      return await change();
    } finally {
      this.configLock.release();
    }
  }

  /** Whether a change runs under the config lock now (it keeps the master awake). */
  get configChanging(): boolean {
    return this.configLock.busy > 0;
  }

  /** Publishes the members and tunables in the directory (master/config.ts). */
  publishConfig(replicas?: string[], nextReplica?: number, locations?: Locations): Promise<void> {
    return publishConfig(this, replicas ?? this.replicas.ids(), nextReplica, locations);
  }

  /** The longest coherency_lease_ms in effect in this term (master/config.ts). */
  maxLeaseMs(): number {
    return maxLeaseMs(this.store, this.tunables);
  }

  heartbeatEvery(): number {
    return Math.max(5, Math.floor(this.tunables.heartbeat_ms / 2));
  }

  pruneEvery(): number {
    return Math.min(PRUNE_EVERY_MS, this.tunables.idempotency_retention_ms);
  }
}
