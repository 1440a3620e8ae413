/**
 * The candidate's side of a promotion: what the directory's record of the new
 * term holds (core/handover.ts) becomes the storage of a master, in one
 * transaction, on a node whose log already ends where the old master stopped.
 * The node then restarts as master and commits the term's first record.
 */
import type { HandoverState } from "../core/handover";
import { fencedLeasesEnd } from "../core/quorum";
import { tunablesFromStored } from "../core/tunables";
import type { NodeStore } from "./node-store";

export interface Takeover {
  cluster: string;
  self: string;
  term: number;
  handover: HandoverState;
  now: number;
}

/** What a replica keeps that a master does not. */
const REPLICA_ONLY = ["stopped", "rebuilding", "snapshot", "diverged"];

export function installHandover(
  storage: DurableObjectStorage,
  store: NodeStore,
  takeover: Takeover,
): void {
  const { handover, now } = takeover;
  const kv = storage.kv;
  storage.transactionSync(() => {
    for (const key of [...kv.list({ prefix: "t:" })].map(([k]) => k)) kv.delete(key);
    for (const [name, value] of Object.entries(handover.tunables)) kv.put(`t:${name}`, value);
    for (const key of [...kv.list({ prefix: "s:" })].map(([k]) => k)) kv.delete(key);
    for (const r of handover.replicas) store.saveReplicaState(r.id, r.state, r.reason);
    store.setMeta("next_replica", String(handover.nextReplica));
    const meta = {
      message_faults: handover.messageFaults,
      lease_removals: handover.leaseRemovals,
      locations: handover.locations ?? null,
    };
    for (const [key, value] of Object.entries(meta)) {
      if (value === null) kv.delete(`m:${key}`);
      else store.setMeta(key, value);
    }
    // The old master's leases may still run. After a handover it says until
    // when (it granted none after); after a promotion without it, every lease
    // it could have granted ends within its contact window and one lease from
    // the fence (core/quorum.ts), at the longest lease length of its term.
    // The new master counts none as over before then (lease-memory.ts).
    const rows = Object.entries(handover.tunables).map(([name, value]) => ({ name, value }));
    const leaseMs = tunablesFromStored(rows).coherency_lease_ms;
    const horizon =
      handover.leaseUntil > 0
        ? Math.max(handover.leaseUntil, now + leaseMs)
        : fencedLeasesEnd(now, Math.max(leaseMs, handover.maxLeaseMs));
    store.setMeta("lease_horizon", String(horizon));
    // This term's longest lease so far is the one it starts with.
    store.setMeta("max_lease_ms", String(leaseMs));
    store.setMeta("term", String(takeover.term));
    store.setMeta("term_start", String(handover.lastLsn + 1));
    store.setMeta("member", takeover.self);
    store.setMeta("cluster", takeover.cluster);
    store.setMeta("role", "master");
    for (const key of REPLICA_ONLY) kv.delete(`m:${key}`);
  });
}
