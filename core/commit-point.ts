/**
 * The commit point: the highest LSN L such that every commit at or below L is
 * on every node that may serve a strong read, now or later. A strong read
 * answers only once the commit point has reached the LSN it read at (the read
 * barrier), so what it returns is never taken back by a later strong read.
 *
 * Why it is computed from acks and not from answers. "Every commit <= L was
 * answered acked" would be wrong twice: commits are answered out of order (a
 * replay waits on an old LSN; a commit with a smaller wait set finishes first),
 * and a commit answered with an error (COMMIT_TIMEOUT, NOT_DURABLE) is written
 * on the master for good but may be missing on a replica holding a lease, so
 * counting it would let a read return it while another read misses it, and
 * never counting it would stop the commit point for ever. What a strong read
 * needs is exactly the full-sync ack condition, so the commit point is read off
 * the nodes that could serve a strong read:
 *
 * - a replica whose last granted lease has not expired (it may be serving one
 *   now, whatever its state: marked incoherent or removed a moment ago);
 * - a coherent replica while leases are granted (it may get one with the next
 *   message).
 *
 * The point is the lowest LSN any of them has acked (the master's LSN when
 * there is none). An LSN at or below it is on every node that may serve a
 * strong read; a node that may serve one later must first be granted a lease,
 * and the master grants one only to a replica that has applied the commit point
 * (the lease floor, see ReplicaSet.grantLease), so the property holds from then
 * on and the point never has to move back. `CommitPoint` keeps the highest
 * value computed: one computed from fewer nodes (a mode switch that grants
 * leases again, a master that restarted and has not heard from its replicas)
 * is lower, never unsafe.
 *
 * A commit answered acked under full sync is at or below it: its wait set was
 * every such node, and a replica that became coherent later joined it. A commit
 * answered with an error reaches it once the lagging node acks or has lost its
 * lease, as the same commit would have been acked.
 */

/** What the commit point needs to know of one replica (removed ones included). */
export interface LeaseNode {
  ackedLsn: number;
  coherent: boolean;
  /** Master-clock instant until which the replica may hold a lease it was granted. */
  leaseUntil: number;
}

export interface CommitPointInput {
  masterLsn: number;
  now: number;
  /** Leases are granted now (full sync, no switch away from it under way). */
  leasesAllowed: boolean;
}

export interface CommitPointBound {
  point: number;
  /**
   * When the bound may rise with no new ack: the earliest lease expiry of a
   * node counted only for its lease and behind the master. Null when none.
   */
  changesAt: number | null;
}

export function commitPointBound(
  nodes: Iterable<LeaseNode>,
  { masterLsn, now, leasesAllowed }: CommitPointInput,
): CommitPointBound {
  let point = masterLsn;
  let changesAt: number | null = null;
  for (const node of nodes) {
    const mayGetLease = node.coherent && leasesAllowed;
    const holdsLease = now < node.leaseUntil;
    if (!mayGetLease && !holdsLease) continue;
    if (node.ackedLsn < point) point = node.ackedLsn;
    if (!mayGetLease && node.ackedLsn < masterLsn) {
      if (changesAt === null || node.leaseUntil < changesAt) changesAt = node.leaseUntil;
    }
  }
  return { point: Math.max(0, point), changesAt };
}

/** The commit point as the master tracks it: the highest bound seen; it never moves back. */
export class CommitPoint {
  private current = 0;

  get value(): number {
    return this.current;
  }

  /** Takes a new bound; returns whether the point moved. */
  advance(bound: number): boolean {
    if (bound <= this.current) return false;
    this.current = bound;
    return true;
  }
}
