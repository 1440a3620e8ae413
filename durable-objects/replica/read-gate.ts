/**
 * A replica's rules for strong reads: it serves one only inside the lease the
 * master granted, less a clock guard band (the lease instant is on the
 * master's clock), and answers only once the commit point the master sent has
 * reached the LSN the read ran at (the read barrier). The lease and the commit point arrive with
 * every message; the lease is taken only after the records that came with it
 * are applied.
 */
import type { AppendRequest, LeaseGrant } from "../../core/protocol";
import { ReadBarrier } from "../../core/read-barrier";

export class ReplicaReadGate {
  /** Master-clock instant until which strong reads may be served; 0 = no lease. */
  private leaseUntil = 0;
  private guardMs = 0;
  private waitBoundMs = 0;
  private readonly barrier = new ReadBarrier();

  /** A message from the master: its settings and commit point always; its lease if taken. */
  learn(request: AppendRequest, takeLease: boolean): void {
    this.guardMs = request.settings.leaseGuardMs;
    this.waitBoundMs = request.settings.strongReadWaitMs;
    this.leaseUntil = takeLease ? request.leaseUntil : 0;
    // The commit point is a fact about the cluster, not about this replica's position:
    // one from any message, however late, is a safe lower bound.
    this.barrier.advance(request.commitPoint);
  }

  /**
   * A lease granted on demand (replica/lease-ask.ts), for a replica that has
   * applied through `grant.throughLsn` in the grant's term (the caller checks).
   */
  grant(grant: LeaseGrant): void {
    this.guardMs = grant.settings.leaseGuardMs;
    this.waitBoundMs = grant.settings.strongReadWaitMs;
    if (grant.leaseUntil > this.leaseUntil) this.leaseUntil = grant.leaseUntil;
    this.barrier.advance(grant.commitPoint);
  }

  /** How long a strong read waits for the commit point (0 until a message said). */
  get waitBound(): number {
    return this.waitBoundMs;
  }

  /** The highest commit point the master has sent. */
  get commitPoint(): number {
    return this.barrier.commitPoint;
  }

  dropLease(): void {
    this.leaseUntil = 0;
  }

  /**
   * The guard band is subtracted here, on the replica's clock: a replica whose
   * clock is up to `lease_guard_ms` behind the master's still stops serving
   * before the master stops counting its lease.
   */
  leaseValid(now: number): boolean {
    return now < this.leaseUntil - this.guardMs;
  }

  /**
   * Whether a replica at `appliedLsn` lacks commits the cluster already counts
   * as committed. A leased replica never should (the commit point counts its
   * acks, and a lease goes only to a replica past it), but one rolled back by a
   * snapshot older than what it had acked would: it must not serve, whatever
   * its lease says.
   */
  behindCommitPoint(appliedLsn: number): boolean {
    return appliedLsn < this.barrier.commitPoint;
  }

  /**
   * The read ran at `lsn`; resolves to null once the commit point reached it,
   * or to the reason it did not within the bound (the read is then redirected).
   */
  async settle(lsn: number): Promise<string | null> {
    if (await this.barrier.reach(lsn, this.waitBoundMs)) return null;
    return `the commit point (LSN ${this.barrier.commitPoint}) did not reach LSN ${lsn}, where the read ran, within ${this.waitBoundMs} ms`;
  }
}
