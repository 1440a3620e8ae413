/** Each replica's row of the status route, from the master's view of it. */
import type { ReplicaStatus } from "../../core/status";
import type { ReplicaSet } from "./replica-set";

export function replicaStatuses(set: ReplicaSet, now: number): ReplicaStatus[] {
  return set.all().map((entry) => ({
    id: entry.id,
    state: entry.state,
    // The highest acked, kept across master restarts (acked-memory.ts); bytes behind from there.
    ackedLsn: entry.relay.highestAckedLsn,
    sentLsn: Math.max(entry.relay.position ?? 0, entry.relay.highestAckedLsn),
    lagMs: set.lagMs(entry, now),
    bytesBehind: set.bytesBehind(entry, entry.relay.highestAckedLsn),
    avgAckMs: Math.round(entry.avgAckMs * 10) / 10,
    ackRttCount: entry.ackRttCount,
    ackRttTotalMs: entry.ackRttTotalMs,
    ackDelayTotalMs: entry.ackDelayTotalMs,
    lastAckAt: entry.relay.lastAckAt,
    leaseUntil: entry.state === "coherent" ? entry.leaseGrantedUntil : 0,
    incoherentReason: entry.reason,
    lastError: entry.relay.lastError,
    pulling: entry.relay.pulling,
    pullBatches: entry.relay.pullBatches,
    rebuilding: entry.relay.snapshotting,
    skipped: entry.relay.skipped,
    heartbeats: entry.relay.heartbeats,
    commitPointNotices: entry.relay.commitPointNotices,
    calls: entry.relay.calls,
    ackCalls: entry.relay.ackCalls,
    batches: entry.relay.batches,
    ackFetches: entry.relay.ackFetches,
    snapshots: entry.relay.snapshots,
    idleMs: entry.relay.lastSentAt === 0 ? 0 : Math.max(0, now - entry.relay.lastSentAt),
  }));
}
