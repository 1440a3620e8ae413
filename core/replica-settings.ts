/**
 * What the master derives from its tunables for the read barrier and tells
 * its replicas with every message (settings travel with each message, so a
 * change reaches every replica with its next batch or heartbeat).
 */
import type { ReplicaSettings } from "./protocol";
import type { Tunables } from "./tunables";

export function replicaSettings(t: Tunables): ReplicaSettings {
  return {
    ackDelayMs: t.debug_ack_delay_ms,
    applyDelayMs: t.debug_apply_delay_ms,
    leaseGuardMs: t.lease_guard_ms,
    strongReadWaitMs: replicaReadWaitMs(t),
    idempotencyRetentionMs: t.idempotency_retention_ms,
    masterFailoverMs: failoverMs(t),
  };
}

/** master_failover_ms as it takes effect: without durable_lsns there is no promotion without the master. */
export function failoverMs(t: Tunables): number {
  return t.durable_lsns ? t.master_failover_ms : 0;
}

/**
 * A strong read on a replica waits this long for the commit point: a lease,
 * and one heartbeat period for the message that brings the point. A replica
 * that learns no sufficient commit point in that time is likely behind itself
 * (slow, cut off), so the read is redirected to the master, which knows best.
 */
export function replicaReadWaitMs(t: Tunables): number {
  return t.coherency_lease_ms + t.heartbeat_ms;
}

/**
 * A strong read on the master waits this long, then answers 503: as long as a
 * commit waits for a lagging replica before that replica leaves the wait sets
 * (its deadline, then its lease). Past that, something is stuck.
 */
export function masterReadWaitMs(t: Tunables): number {
  return t.rep_timeout_ms + t.coherency_lease_ms;
}
