/**
 * The master's timed jobs, run through one scheduler (TimedJobs): waiter
 * deadlines, heartbeats, relay restarts, the slow-replica check, pruning of
 * saved results and log truncation.
 */
import { awakeBecause } from "../../core/idle";
import { truncationPoint } from "../../core/log-retention";
import { failoverMs } from "../../core/replica-settings";
import { type MasterCore, SLOW_CHECK_EVERY_MS, TRUNCATE_EVERY_MS } from "./core";

/** Log rows deleted per truncation step, so one step never blocks the master for long. */
const TRUNCATE_CHUNK_ROWS = 5_000;

export function runJob(core: MasterCore, job: string, now: number): void {
  if (job === "waiter") {
    core.waiter.pass();
    return;
  }
  if (job === "heartbeat") {
    const replicas = core.replicas;
    for (const entry of replicas.all()) {
      entry.relay.heartbeatIfDue();
      entry.relay.pump();
      replicas.checkUnreachable(entry, now);
      replicas.checkLagging(entry, now);
      if (replicas.checkRejoin(entry)) core.waiter.requestPass();
    }
    replicas.purgeDeparted(now);
    if (maySleep(core, now)) {
      sleep(core, now);
      return;
    }
    core.jobs.at("heartbeat", now + core.heartbeatEvery());
    return;
  }
  if (job === "slow-check") {
    core.replicas.checkSlow();
    // On this job's second rather than a timer of its own: no extra wake-up for an idle cluster.
    core.ackedMemory.save();
    core.jobs.at("slow-check", now + SLOW_CHECK_EVERY_MS);
    return;
  }
  if (job === "prune") {
    pruneResults(core, now);
    core.jobs.at("prune", now + core.pruneEvery());
    return;
  }
  if (job === "truncate") {
    const more = truncateLog(core);
    core.jobs.at("truncate", now + (more ? 0 : TRUNCATE_EVERY_MS));
    return;
  }
  if (job.startsWith("relay-restart:")) {
    core.replicas.get(job.slice("relay-restart:".length))?.relay.retryNow();
  }
}

/** Saved results past idempotency_retention_ms go. */
function pruneResults(core: MasterCore, now: number): void {
  // A result whose commit still waits for acks is kept whatever its age: its
  // client may be retrying right now.
  const waiting = core.waiter.oldestLsn();
  const answered = waiting === null ? core.lsn : waiting - 1;
  core.ctx.storage.transactionSync(() =>
    core.store.pruneResults(now - core.tunables.idempotency_retention_ms, answered),
  );
}

/** Whether the master may sleep now (core/idle.ts); the reason it may not is kept for status. */
function maySleep(core: MasterCore, now: number): boolean {
  const t = core.tunables;
  const why = awakeBecause({
    now,
    lastActiveAt: core.idle.lastActiveAt,
    idleAfterMs: t.idle_after_ms,
    failoverMs: failoverMs(t),
    masterLsn: core.lsn,
    frozen: core.frozen,
    configChanging: core.configChanging,
    outstanding: core.waiter.outstanding + core.writers.busy,
    pinnedLsn: core.snapshots.lsn,
    truncationPending: truncationTarget(core) > core.truncatedThrough,
    truncatedThrough: core.truncatedThrough,
    replicas: core.replicas.all().map((entry) => ({
      id: entry.id,
      state: entry.state,
      ackedLsn: entry.relay.ackedLsn,
      retrying: entry.relay.backingOff,
      logTruncatedThrough: entry.relay.replicaTruncatedThrough,
    })),
  });
  core.idle.awakeBecause = why;
  return why === null;
}

/**
 * Puts the master to sleep: the jobs that would still come round (pruning
 * saved results, the acked memory) run now, then every job and the alarm go.
 * A request wakes it (MasterIdle.touch), restarting them.
 */
function sleep(core: MasterCore, now: number): void {
  pruneResults(core, now);
  core.ackedMemory.save();
  core.jobs.sleep();
  core.idle.slept();
}

/** Where the log could be truncated to now. */
function truncationTarget(core: MasterCore): number {
  const entries = core.replicas.all();
  const minAcked = entries.reduce((m, e) => Math.min(m, e.relay.ackedLsn), core.lsn);
  return truncationPoint({
    lsn: core.lsn,
    minAckedLsn: minAcked,
    retain: core.tunables.log_retain_records,
    max: core.tunables.log_max_records,
    pinnedLsn: core.snapshots.lsn,
  });
}

/**
 * Truncates log records every replica has acked, keeping log_retain_records,
 * and never keeping more than log_max_records (a replica that needed those is
 * rebuilt from a snapshot). A snapshot in progress pins the records after it.
 * Returns whether more is left to truncate (one chunk per step).
 */
function truncateLog(core: MasterCore): boolean {
  const target = truncationTarget(core);
  if (target <= core.truncatedThrough) return false;
  const through = Math.min(target, core.truncatedThrough + TRUNCATE_CHUNK_ROWS);
  core.ctx.storage.transactionSync(() => core.store.truncateLog(core.truncatedThrough, through));
  core.truncatedThrough = through;
  core.tail.dropThrough(through);
  // The log passed a snapshot still streaming: it can no longer be caught up
  // from, so it goes, and its replicas take a new one.
  const pinned = core.snapshots.lsn;
  if (pinned !== null && pinned < through) core.snapshots.abandon();
  return through < target;
}
