/**
 * When a master may sleep (scale to zero): after `idle_after_ms` with nothing
 * asked of it (no write, no strong read, no lease asked for) and nothing left
 * to do, it stops its heartbeats and timed jobs and clears its alarm, so the
 * platform can evict every node of the cluster. Nothing is weakened by it:
 * every replica is coherent and at the master's LSN, no commit waits, no
 * snapshot or export holds the log, and the leases granted run out on their
 * own (a replica serves no strong read without one; it asks for one when it
 * needs it). The rule is pure: the master gathers the facts, this says why it
 * must stay awake, or null.
 */

export interface IdleReplica {
  id: string;
  state: string;
  ackedLsn: number;
  /** Whether its relay is backing off after a failure (or is cut off): it has sending left to do. */
  retrying: boolean;
  /** Where it says its own log is truncated through. */
  logTruncatedThrough: number;
}

export interface IdleFacts {
  now: number;
  /** The last time anything was asked of the master. */
  lastActiveAt: number;
  idleAfterMs: number;
  /** master_failover_ms as the replicas apply it: they must hear the master to keep still. */
  failoverMs: number;
  masterLsn: number;
  /** Why the master takes no write (a handover, a step-down), or null. */
  frozen: string | null;
  /** A membership, tunables or faults change (or a handover) is running. */
  configChanging: boolean;
  /** Commits held by the waiter. */
  outstanding: number;
  /** A snapshot or an export holds the log at this LSN. */
  pinnedLsn: number | null;
  /** Log records that may be truncated and are not yet. */
  truncationPending: boolean;
  /** The log is truncated through this LSN. */
  truncatedThrough: number;
  replicas: readonly IdleReplica[];
}

/** Why the master stays awake now, or null when it may sleep. */
export function awakeBecause(f: IdleFacts): string | null {
  if (f.idleAfterMs === 0) return "idle_after_ms is 0";
  if (f.failoverMs > 0)
    return "master_failover_ms is on: the replicas must keep hearing the master";
  const quietMs = f.now - f.lastActiveAt;
  if (quietMs < f.idleAfterMs) return `active ${quietMs} ms ago`;
  if (f.frozen !== null) return f.frozen;
  // It may be waiting out leases, and applies its tunables (failover on, say) only after.
  if (f.configChanging) return "a membership or tunables change is running";
  if (f.outstanding > 0) return `${f.outstanding} commits wait for acks`;
  if (f.pinnedLsn !== null) return `a snapshot or an export holds the log at LSN ${f.pinnedLsn}`;
  if (f.truncationPending) return "the log has records to truncate";
  for (const r of f.replicas) {
    if (r.state !== "coherent") return `${r.id} is ${r.state}`;
    if (r.ackedLsn < f.masterLsn) return `${r.id} has acked LSN ${r.ackedLsn} of ${f.masterLsn}`;
    if (r.retrying) return `${r.id} is being retried`;
  }
  // A replica follows the master's truncation point only as messages bring it
  // (through its own newest record, which says where it is): asleep, the master
  // would leave its log untruncated until it woke. Its answers say where it is,
  // after a restart that forgot the target too. Named after the reasons above,
  // which a heartbeat does not settle.
  const target = Math.min(f.truncatedThrough, f.masterLsn - 1);
  const behind = f.replicas.find((r) => r.logTruncatedThrough < target);
  if (behind !== undefined) {
    return `${behind.id} has truncated its log through LSN ${behind.logTruncatedThrough} of ${target}`;
  }
  // A call still in flight does not keep it awake: with every replica at the
  // LSN it can only be a heartbeat, whose answer is taken whenever it comes.
  return null;
}
