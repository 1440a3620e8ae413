/**
 * What a master must remember about the leases it granted, so that a new
 * incarnation never counts one as over while a replica may still hold it:
 *
 * - the lease horizon: an instant no lease granted so far runs past. It is
 *   written in steps (now + 2 x coherency_lease_ms, only when a lease about to
 *   be granted would run past the one written), so at most one write per lease
 *   period, not one per message. One value for the whole cluster rather than
 *   one per replica: one write instead of one per replica, and what it costs,
 *   over-estimating the lease of a replica that had none, is paid only after a
 *   restart, for at most two lease periods, by commits waiting on a replica
 *   that was already out of the wait sets;
 * - recent removals, each with the last instant its lease may run to, until
 *   that instant has passed (a removed replica is not in _repl_replicas).
 *
 * Every storage call of lease bookkeeping is here, behind `MetaStore`. The
 * write happens before the message carrying the lease is sent, and the output
 * gate holds that message until the write is durable.
 */
export interface MetaStore {
  getMeta(key: string): string | null;
  setMeta(key: string, value: string): void;
}

const HORIZON = "lease_horizon";
const REMOVALS = "lease_removals";

export interface Removal {
  id: string;
  leaseUntil: number;
}

export class LeaseMemory {
  /** Read on first use (the master's storage is migrated after construction); null: none. */
  private horizon: number | null | undefined;

  constructor(private readonly store: MetaStore) {}

  private savedHorizon(): number | null {
    if (this.horizon === undefined) {
      const saved = this.store.getMeta(HORIZON);
      this.horizon = saved === null ? null : Number(saved);
    }
    return this.horizon;
  }

  /** A lease running to `until` is about to be granted: the horizon must cover it first. */
  cover(until: number, leaseMs: number, now: number): void {
    const horizon = this.savedHorizon();
    if (horizon !== null && until <= horizon) return;
    this.horizon = Math.max(until, now + 2 * leaseMs);
    this.store.setMeta(HORIZON, String(this.horizon));
  }

  /**
   * At start-up: until when a lease an earlier incarnation granted may be held.
   * A cluster that never wrote a horizon (older versions) assumes one lease period.
   */
  heldUntil(now: number, leaseMs: number): number {
    return this.savedHorizon() ?? now + leaseMs;
  }

  /** A replica was removed; its lease may run until `leaseUntil`. */
  removed(id: string, leaseUntil: number, now: number): void {
    const kept = this.removals(now).filter((r) => r.id !== id);
    if (now < leaseUntil) kept.push({ id, leaseUntil });
    this.store.setMeta(REMOVALS, JSON.stringify(kept));
  }

  /** Removed replicas whose lease may still run at `now`. */
  removals(now: number): Removal[] {
    const saved = this.store.getMeta(REMOVALS);
    if (saved === null) return [];
    return (JSON.parse(saved) as Removal[]).filter((r) => now < r.leaseUntil);
  }
}
