/**
 * Promotion without the master, the rules (the master is lost or cut off, so
 * it cannot hand over). A promotion to term T+1 first fences every member it
 * can reach into T+1 (each refuses term T from then on, the old master's
 * records, acks and leases included), then chooses among the answers.
 *
 * Why the choice keeps every acknowledged write. With durable_lsns a write is
 * acknowledged only once a majority of the sanctioned nodes has it, and a
 * master of a later term acknowledges an inherited write only once its own
 * term's first record is on a majority too (Raft's rule for entries of
 * earlier terms). The promotion needs answers from a majority, which meets
 * every such majority in at least one node; it takes the most up-to-date log
 * among the answers (the later last term, then the longer log, Raft's
 * election restriction), and a log at least as up to date as one holding an
 * acknowledged write holds it too, since every log of a term is a prefix of
 * that term's master's log. Fencing a majority first means the old master can
 * no longer gather a majority for anything: it acknowledges nothing more, and
 * within one lease period it grants no lease and answers no strong read
 * (core/quorum.ts), while the new master waits two lease periods before it
 * counts any old lease as over.
 */
import { majority } from "./quorum";
import { newerLog } from "./terms";

export interface PrepareAnswer {
  member: string;
  /** The highest term the member knows after the fence. */
  knownTerm: number;
  lastTerm: number;
  lastLsn: number;
  /** Why it could not be master (rebuilding, diverged), or null. */
  refusal: string | null;
}

export type FailoverChoice =
  | { ok: true; id: string; lastLsn: number }
  | { ok: false; reason: string };

/**
 * `members` are every sanctioned node (the old master among them), `answers`
 * those that answered the fence into `term`.
 */
export function chooseWithoutMaster(
  members: readonly string[],
  answers: readonly PrepareAnswer[],
  term: number,
  named: string | undefined,
): FailoverChoice {
  const later = answers.find((a) => a.knownTerm > term);
  if (later !== undefined) {
    return {
      ok: false,
      reason: `${later.member} knows term ${later.knownTerm}: a later promotion is under way`,
    };
  }
  const counted = answers.filter((a) => members.includes(a.member));
  const needed = majority(members.length);
  if (counted.length < needed) {
    return {
      ok: false,
      reason: `only ${counted.length} of ${members.length} members answered; a promotion without the master needs ${needed}`,
    };
  }
  const newest = counted.reduce((top, a) => (newerLog(a, top) ? a : top));
  const pick =
    named === undefined
      ? (counted.find((a) => a.refusal === null && !newerLog(newest, a)) ?? null)
      : (counted.find((a) => a.member === named) ?? null);
  if (pick === null) {
    if (named !== undefined) return { ok: false, reason: `${named} did not answer` };
    return {
      ok: false,
      reason: `${newest.member} has the newest log (LSN ${newest.lastLsn}, term ${newest.lastTerm}) but cannot be master: ${newest.refusal}`,
    };
  }
  if (pick.refusal !== null)
    return { ok: false, reason: `${pick.member} cannot be master: ${pick.refusal}` };
  if (newerLog(newest, pick)) {
    return {
      ok: false,
      reason: `${pick.member} is behind ${newest.member} (LSN ${pick.lastLsn} against ${newest.lastLsn}): it may lack acknowledged writes`,
    };
  }
  return { ok: true, id: pick.member, lastLsn: pick.lastLsn };
}
