/**
 * A replica's rules for strong reads: it serves one only inside the lease the
 * master granted, and answers only once the commit point the master sent has reached the LSN the
 * read ran at (the read barrier). The lease and the commit point arrive with
 * every message; the lease is taken only after the records that came with it
 * are applied.
 */
import type { AppendRequest } from "../core/protocol";
import { ReadBarrier } from "../core/read-barrier";

export class ReplicaReadGate {
  /** Master-clock instant until which strong reads may be served; 0 = no lease. */
  private leaseUntil = 0;
  private waitBoundMs = 0;
  private readonly barrier = new ReadBarrier();

  /** A message from the master: its settings and commit point always; its lease if taken. */
  learn(request: AppendRequest, takeLease: boolean): void {
    this.waitBoundMs = request.settings.strongReadWaitMs;
    this.leaseUntil = takeLease ? request.leaseUntil : 0;
    // The commit point is a fact about the cluster, not about this replica's position:
    // one from any message, however late, is a safe lower bound.
    this.barrier.advance(request.commitPoint);
  }

  dropLease(): void {
    this.leaseUntil = 0;
  }

  leaseValid(now: number): boolean {
    return now < this.leaseUntil;
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
