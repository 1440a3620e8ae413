/**
 * Majorities over a cluster's sanctioned nodes, the master counted (Comdb2's
 * durable LSNs). Two rules rest on them, and promotion without the master
 * relies on both:
 *
 * - the durable point: the highest LSN a majority of the nodes has. With
 *   durable_lsns a commit is acknowledged only at or below it, and the commit
 *   point (what strong reads may return) never passes it, so nothing a client
 *   saw can be missing from a majority;
 * - quorum contact: a master grants leases only while a majority of the
 *   nodes answered, in its term, a message it sent within the last
 *   CONTACT_WINDOW_LEASES lease periods (a window of several periods, so that
 *   a majority slower to answer than one lease still counts). A master cut off
 *   from a majority, which may have moved to a newer term, grants no lease
 *   after that window, and the last one it granted ends one lease later: a new
 *   master that fenced the majority counts no lease as over before
 *   `fencedLeasesEnd`. (Strong reads on the master ask more: a majority that
 *   answered after the read ran, Raft's read index.)
 */

/** Lease periods a master's last contact with a majority may be old and still let it grant leases. */
export const CONTACT_WINDOW_LEASES = 3;

/**
 * When every lease a fenced master may have granted has ended, counted from
 * the fence: its contact window, then the longest lease it granted.
 */
export function fencedLeasesEnd(fencedAt: number, leaseMs: number): number {
  return fencedAt + (CONTACT_WINDOW_LEASES + 1) * leaseMs;
}

/** How many of `nodes` make a majority. */
export function majority(nodes: number): number {
  return Math.floor(nodes / 2) + 1;
}

/**
 * The highest LSN that at least a majority of the nodes has: the master at
 * `masterLsn`, each replica at its acked LSN.
 */
export function durablePoint(masterLsn: number, replicaAcked: readonly number[]): number {
  const all = [masterLsn, ...replicaAcked].sort((a, b) => b - a);
  return all[majority(all.length) - 1] ?? 0;
}

/**
 * Whether a majority of the nodes (the master itself one of them) answered a
 * message sent at or after `since`: `answeredSentAt` holds, per sanctioned
 * replica, the send time of the latest message it answered in this term.
 */
export function hasQuorumContact(answeredSentAt: readonly number[], since: number): boolean {
  let answered = 1;
  for (const at of answeredSentAt) if (at >= since) answered++;
  return answered >= majority(answeredSentAt.length + 1);
}

/**
 * Whether `holders` of `nodes` meet every majority of them: more holders than
 * a majority leaves out. A membership change must keep what was acknowledged
 * on such a set of the new members, or a promotion that counts the new
 * members could choose among nodes that all lack it.
 */
export function metByEveryMajority(holders: number, nodes: number): boolean {
  return holders > nodes - majority(nodes);
}
