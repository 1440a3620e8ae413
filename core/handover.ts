/**
 * Promotion by handover, the rules: who may become master, and what the new
 * master inherits.
 *
 * The candidate rule. Under full sync a commit is acknowledged only once every
 * replica of its wait set has acked it, and the wait set of a commit is every
 * coherent replica (a replica leaves the wait sets only by being marked
 * incoherent, and joins them again only once it has applied every answered
 * commit, core/ack-book.ts). So a replica that is coherent now has applied
 * every acknowledged commit: those it was in the wait set of, it acked; those
 * from before it last rejoined, it had applied to rejoin. The old master also
 * stops committing and waits until the candidate has acked its last LSN, so
 * the candidate's log is the old master's, record for record, and the commits
 * still waiting when the handover began are answered (acked or timed out)
 * before it. A replica that is incoherent may lack acknowledged commits and is
 * never a candidate.
 */
import type { ReplicaState } from "./status";

export interface HandoverMember {
  id: string;
  state: ReplicaState;
  reason: string | null;
}

/** What the new master takes over, written with the term in the directory. */
export interface HandoverState {
  /** The member that was master, and the LSN it stopped at: the new master's log ends there. */
  from: string;
  lastLsn: number;
  /** Tunables as stored (name -> JSON text). */
  tunables: Record<string, string>;
  /** The new master's replicas: every other member, the old master among them. */
  replicas: HandoverMember[];
  nextReplica: number;
  /** Test-only message faults (JSON text), if set. */
  messageFaults: string | null;
  /** Each member's location hint (JSON text of core/placement.ts Locations), if any. */
  locations?: string | null;
  /** Removed replicas whose lease may still run (lease-memory.ts, JSON text). */
  leaseRemovals: string | null;
  /**
   * The latest instant a lease the old master granted may run to (0 when it
   * is not known: a promotion without it), and the longest lease granted in
   * its term: the new master counts no replica's lease as over before either
   * has passed (a lease shortened by a tunable change may have been granted
   * at its old length).
   */
  leaseUntil: number;
  maxLeaseMs: number;
}

export interface CandidateView {
  id: string;
  state: ReplicaState;
  ackedLsn: number;
}

export type CandidateChoice = { ok: true; id: string } | { ok: false; reason: string };

/** The named replica if it may be promoted, else the coherent one furthest along. */
export function chooseCandidate(
  replicas: readonly CandidateView[],
  named: string | undefined,
): CandidateChoice {
  if (named !== undefined) {
    const replica = replicas.find((r) => r.id === named);
    if (replica === undefined) return { ok: false, reason: `no replica ${named} in this cluster` };
    if (replica.state !== "coherent") {
      return {
        ok: false,
        reason: `${named} is ${replica.state}: it may lack acknowledged writes, so it cannot be promoted; promote a coherent replica`,
      };
    }
    return { ok: true, id: named };
  }
  const coherent = replicas.filter((r) => r.state === "coherent");
  const best = coherent.reduce<CandidateView | null>(
    (top, r) => (top === null || r.ackedLsn > top.ackedLsn ? r : top),
    null,
  );
  if (best === null) {
    return {
      ok: false,
      reason: "no replica is coherent: none is known to hold every acknowledged write",
    };
  }
  return { ok: true, id: best.id };
}

/** The new master's replicas: everyone but itself, the old master as a coherent one. */
export function inheritedReplicas(
  replicas: readonly HandoverMember[],
  candidate: string,
  oldMaster: string,
): HandoverMember[] {
  return [
    { id: oldMaster, state: "coherent", reason: null },
    ...replicas.filter((r) => r.id !== candidate && r.id !== oldMaster),
  ];
}
