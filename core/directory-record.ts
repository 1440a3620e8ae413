/**
 * A cluster's directory record: which member is master, in which term. It
 * changes only by compare-and-set on the term, so two promotions racing from
 * the same term cannot both win, and a term is never reused: there is at most
 * one master per term (Raft's election safety, Tarantool's PROMOTE).
 */
import type { HandoverState } from "./handover";
import { FIRST_MASTER } from "./members";

export interface DirectoryRecord {
  term: number;
  master: string;
  /** When the term began (directory clock), for operators. */
  since: number;
  /** What the master of this term took over from the last one (none in term 1). */
  handover?: HandoverState;
}

export type CasOutcome =
  | { ok: true; record: DirectoryRecord }
  | { ok: false; record: DirectoryRecord; reason: string };

export function firstRecord(now: number): DirectoryRecord {
  return { term: 1, master: FIRST_MASTER, since: now };
}

/**
 * The next record if `expectedTerm` is still the current one: a new term with
 * `master` as its master. Otherwise the current record, unchanged.
 */
export function compareAndSet(
  current: DirectoryRecord,
  expectedTerm: number,
  master: string,
  handover: HandoverState,
  now: number,
): CasOutcome {
  if (current.term !== expectedTerm) {
    return {
      ok: false,
      record: current,
      reason: `the term is ${current.term}, not ${expectedTerm}: another promotion won`,
    };
  }
  if (master === "" || master.length > 64) {
    return { ok: false, record: current, reason: "a master needs a member id" };
  }
  return { ok: true, record: { term: current.term + 1, master, since: now, handover } };
}
