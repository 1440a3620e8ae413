/**
 * The master's Prometheus metrics, kept live in a prom-client registry inside
 * the master (counters and histograms must see every event, and only the
 * master sees them) and rendered as text for GET /metrics.
 */
import { Counter, Gauge, Histogram, type LabelValues, Registry } from "prom-client";

export interface MetricsSource {
  outstanding(): number;
  writersBusy(): number;
  lsn(): number;
  asleep(): boolean;
  replicas(): { id: string; lagMs: number; ackedLsn: number; coherent: boolean }[];
}

const LATENCY_BUCKETS_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

export class MasterMetrics {
  readonly registry = new Registry();
  readonly commits: Counter<"cluster">;
  readonly handoffs: Counter<"cluster">;
  readonly inlineWaits: Counter<"cluster" | "reason">;
  readonly replayed: Counter<"cluster">;
  readonly errors: Counter<"cluster" | "code">;
  readonly incoherentMarks: Counter<"cluster" | "replica" | "reason">;
  readonly snapshotFailures: Counter<"cluster" | "replica">;
  readonly divergences: Counter<"cluster" | "replica">;
  readonly ackLatency: Histogram<"cluster" | "replica">;
  readonly commitLatency: Histogram<"cluster" | "outcome" | "path">;
  readonly passes: Counter<"cluster">;
  readonly passComparisons: Counter<"cluster">;
  readonly skippedEarlyStop: Counter<"cluster">;

  constructor(
    private readonly cluster: () => string,
    private readonly source: MetricsSource,
  ) {
    const registers = [this.registry];
    this.commits = new Counter({
      name: "dosql_commits_total",
      help: "Write transactions committed on the master.",
      labelNames: ["cluster"],
      registers,
    });
    this.handoffs = new Counter({
      name: "dosql_waiter_handoffs_total",
      help: "Commits handed to the waiter, freeing their writer slot while acks travel.",
      labelNames: ["cluster"],
      registers,
    });
    this.inlineWaits = new Counter({
      name: "dosql_inline_waits_total",
      help: "Commits that waited for acks holding their writer slot, by reason.",
      labelNames: ["cluster", "reason"],
      registers,
    });
    this.replayed = new Counter({
      name: "dosql_replayed_requests_total",
      help: "Requests answered from the saved result of an earlier request with the same Idempotency-Key.",
      labelNames: ["cluster"],
      registers,
    });
    this.errors = new Counter({
      name: "dosql_errors_total",
      help: "Errors the master returned, by code.",
      labelNames: ["cluster", "code"],
      registers,
    });
    this.incoherentMarks = new Counter({
      name: "dosql_incoherent_marks_total",
      help: "Times a replica was marked incoherent, by cause.",
      labelNames: ["cluster", "replica", "reason"],
      registers,
    });
    this.snapshotFailures = new Counter({
      name: "dosql_snapshot_failures_total",
      help: "Snapshot streams to a replica that failed (each is retried with backoff, resuming).",
      labelNames: ["cluster", "replica"],
      registers,
    });
    this.divergences = new Counter({
      name: "dosql_divergences_total",
      help: "Times a replica reported effects that differ from the master's (it is rebuilt from a snapshot).",
      labelNames: ["cluster", "replica"],
      registers,
    });
    this.ackLatency = new Histogram({
      name: "dosql_ack_latency_ms",
      help: "Time from sending a batch to a replica to its ack, in milliseconds.",
      labelNames: ["cluster", "replica"],
      buckets: LATENCY_BUCKETS_MS,
      registers,
    });
    this.commitLatency = new Histogram({
      name: "dosql_commit_wait_ms",
      help: "Time from the hand-off (or the start of an inline wait) to the answer, in milliseconds, by outcome and path (handoff, inline, replay).",
      labelNames: ["cluster", "outcome", "path"],
      buckets: LATENCY_BUCKETS_MS,
      registers,
    });
    this.passes = new Counter({
      name: "dosql_waiter_passes_total",
      help: "Ack-check passes the waiter ran over its outstanding commits.",
      labelNames: ["cluster"],
      registers,
    });
    this.passComparisons = new Counter({
      name: "dosql_waiter_pass_comparisons_total",
      help: "Ack comparisons (a node's acked LSN against a commit's LSN) made by all passes.",
      labelNames: ["cluster"],
      registers,
    });
    this.skippedEarlyStop = new Counter({
      name: "dosql_waiter_skipped_early_stop_total",
      help: "Commits a pass skipped because they wait on a node already found behind.",
      labelNames: ["cluster"],
      registers,
    });
    const label = () => ({ cluster: this.cluster() });
    new Gauge({
      name: "dosql_waiter_outstanding",
      help: "Commits waiting for acks right now (the waiter's queue depth plus inline waits).",
      labelNames: ["cluster"],
      registers,
      collect() {
        this.set(label(), source.outstanding());
      },
    });
    new Gauge({
      name: "dosql_writers_busy",
      help: "Writer slots in use.",
      labelNames: ["cluster"],
      registers,
      collect() {
        this.set(label(), source.writersBusy());
      },
    });
    new Gauge({
      name: "dosql_master_lsn",
      help: "The master's last assigned LSN.",
      labelNames: ["cluster"],
      registers,
      collect() {
        this.set(label(), source.lsn());
      },
    });
    new Gauge({
      name: "dosql_master_asleep",
      help: "1 while the master sleeps (scale to zero: no heartbeat, no timed job, no alarm), else 0.",
      labelNames: ["cluster"],
      registers,
      collect() {
        this.set(label(), source.asleep() ? 1 : 0);
      },
    });
    // Reset on every collect, then set for the replicas there are now: prom-client
    // keeps a label set until it is removed, and a removed replica must not stay on
    // /metrics frozen (coherent, its acked LSN falling ever further behind).
    const perReplica = (name: string, help: string, value: (r: ReplicaMetrics) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ["cluster", "replica"],
        registers,
        collect() {
          this.reset();
          for (const r of source.replicas()) this.set({ ...label(), replica: r.id }, value(r));
        },
      });
    perReplica(
      "dosql_replica_lag_ms",
      "Per replica: how long its oldest unacked record has been due to it (sent, or waiting to be sent); 0 when it has acked everything.",
      (r) => r.lagMs,
    );
    perReplica(
      "dosql_replica_acked_lsn",
      "Per replica: the highest LSN it acked (kept across master restarts).",
      (r) => r.ackedLsn,
    );
    perReplica(
      "dosql_replica_coherent",
      "Per replica: 1 while coherent (in wait sets, serving strong reads), else 0.",
      (r) => (r.coherent ? 1 : 0),
    );
  }

  /**
   * Counters and histograms labelled by replica keep their series until they
   * are removed: those of replicas that are no longer members go before each
   * render, so every per-replica series on /metrics is of a current member.
   */
  async render(): Promise<string> {
    const members = new Set(this.source.replicas().map((r) => r.id));
    await dropSeriesOfGone(
      [this.incoherentMarks, this.snapshotFailures, this.divergences, this.ackLatency],
      members,
    );
    return this.registry.metrics();
  }
}

type ReplicaMetrics = ReturnType<MetricsSource["replicas"]>[number];

/** Removes every series of `metrics` whose `replica` label is not in `members`. */
async function dropSeriesOfGone(
  metrics: (Counter<string> | Histogram<string>)[],
  members: ReadonlySet<string>,
): Promise<void> {
  for (const metric of metrics) {
    const gone = new Map<string, LabelValues<string>>();
    for (const { labels } of (await metric.get()).values) {
      const replica = labels.replica;
      if (replica === undefined || members.has(String(replica))) continue;
      // A histogram's bucket lines carry `le` as well; its series is the rest.
      const { le: _bucket, ...series } = labels;
      gone.set(JSON.stringify(series), series);
    }
    for (const series of gone.values()) metric.remove(series);
  }
}
