/**
 * Term fencing, the replica's side: every message from a master carries its
 * term and the LSN its term began at (the master's first record of the term).
 * A node remembers the highest term it has seen, durably, before it applies
 * anything of that term.
 *
 * - An older term is refused: its master was replaced, and whatever it sends
 *   (records, acks it asks for, leases) must not count.
 * - A newer term is adopted (and a term adopted ahead of its first message, by
 *   a promotion without the old master, is checked with that message), unless
 *   this node holds records at or past the
 *   new term's first LSN: those came from an older master and were never
 *   acknowledged (the new master did not have them), so this node's state has
 *   a tail that no longer exists. SQLite cannot undo it record by record: the
 *   node is rebuilt from a snapshot of the new master (Comdb2 truncates the
 *   non-durable tail after a master swing; a rebuild is that, wholesale).
 */

export type TermVerdict =
  | { kind: "same" }
  | { kind: "adopt" }
  | { kind: "refuse"; knownTerm: number }
  | { kind: "diverged-tail"; detail: string };

/**
 * `knownTerm` is the highest term the node has seen; `checkedTerm` the highest
 * whose first LSN it has checked its log against. They differ after a
 * promotion without the old master fenced this node (it adopted the term
 * before its master was chosen, so before the term's first LSN was known):
 * the first message of that term does the check.
 */
export function judgeTerm(
  knownTerm: number,
  checkedTerm: number,
  message: { term: number; termStartLsn: number },
  appliedLsn: number,
): TermVerdict {
  if (message.term < knownTerm) return { kind: "refuse", knownTerm };
  if (message.term <= checkedTerm) return { kind: "same" };
  if (appliedLsn >= message.termStartLsn) {
    return {
      kind: "diverged-tail",
      detail: `applied through LSN ${appliedLsn} under an older term; term ${message.term} began at LSN ${message.termStartLsn}`,
    };
  }
  return { kind: "adopt" };
}

/** Raft's "at least as up to date": a later last term, or the same term and a longer log. */
export function newerLog(
  a: { lastTerm: number; lastLsn: number },
  b: { lastTerm: number; lastLsn: number },
): boolean {
  return a.lastTerm > b.lastTerm || (a.lastTerm === b.lastTerm && a.lastLsn > b.lastLsn);
}
