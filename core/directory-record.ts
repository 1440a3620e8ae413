/**
 * A cluster's directory record: which member is master, in which term. It
 * changes only by compare-and-set on the term, so two promotions racing from
 * the same term cannot both win, and a term is never reused: there is at most
 * one master per term (Raft's election safety, Tarantool's PROMOTE).
 */
import type { HandoverState } from "./handover";
import { FIRST_MASTER } from "./members";
import type { Locations } from "./placement";

export interface DirectoryRecord {
  term: number;
  master: string;
  /** When the term began (directory clock), for operators. */
  since: number;
  /** What the master of this term took over from the last one (none in term 1). */
  handover?: HandoverState;
  /**
   * What a promotion without the master needs: the sanctioned members and the
   * tunables, published by the master of this term before either changes.
   */
  config?: ClusterConfig;
  /**
   * Set while DELETE /admin/clusters/{cluster} runs: no master starts, and no
   * promotion or publish is taken. Once every member is gone the record gives
   * way to a new cluster's, in the next term (firstRecord).
   */
  deleting?: true;
}

export interface ClusterConfig {
  /** The sanctioned replicas (the master is `master`). */
  replicas: string[];
  /** Tunables as stored (name -> JSON text). */
  tunables: Record<string, string>;
  nextReplica: number;
  /** The longest coherency_lease_ms in effect in this term (leases granted at it may still run). */
  maxLeaseMs: number;
  /** Test-only message faults (JSON text), if set: a promotion keeps them. */
  messageFaults?: string | null;
  /** Each member's location hint, where it has one (core/placement.ts). */
  locations?: Locations;
}

export type CasOutcome =
  | { ok: true; record: DirectoryRecord }
  | { ok: false; record: DirectoryRecord; reason: string };

/**
 * A new cluster's record: term 1, or, for a name whose cluster was deleted,
 * the term after the deleted cluster's last, so no decision taken in an old
 * term (a promotion's compare-and-set, a master's publish) can land on the
 * new cluster: terms of a name are never reused.
 */
export function firstRecord(now: number, term = 1): DirectoryRecord {
  return { term, master: FIRST_MASTER, since: now };
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
  if (current.deleting === true) {
    return { ok: false, record: current, reason: "the cluster is being deleted" };
  }
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
  return {
    ok: true,
    record: {
      term: current.term + 1,
      master,
      since: now,
      handover,
      // The members stay; the new master lists its own replicas (the old master among them).
      ...(current.config === undefined
        ? {}
        : { config: { ...current.config, replicas: handover.replicas.map((r) => r.id) } }),
    },
  };
}

/** The master of `term` publishes its configuration; anyone else, or an older term, is refused. */
export function publishConfig(
  current: DirectoryRecord,
  term: number,
  master: string,
  config: ClusterConfig,
): CasOutcome {
  if (current.deleting === true) {
    return { ok: false, record: current, reason: "the cluster is being deleted" };
  }
  if (current.term !== term || current.master !== master) {
    return {
      ok: false,
      record: current,
      reason: `term ${current.term} is ${current.master}'s, not term ${term} ${master}'s`,
    };
  }
  return { ok: true, record: { ...current, config } };
}
