/**
 * The directory of one cluster: a small Durable Object that says which member
 * is master and in which term. It is the one place a promotion takes effect
 * (compare-and-set on the term, core/directory-record.ts), so the front door
 * and every node agree on the master of a term. A Durable Object runs one
 * call at a time to completion between awaits, and these have none: each
 * read-modify-write is atomic, and its storage write is confirmed before the
 * answer leaves (the output gate).
 */
import { DurableObject } from "cloudflare:workers";
import {
  type CasOutcome,
  type ClusterConfig,
  compareAndSet,
  type DirectoryRecord,
  firstRecord,
  publishConfig,
} from "../core/directory-record";
import type { HandoverState } from "../core/handover";
import { defaultLocations, stubWithHint } from "./placement-env";

const RECORD_KEY = "record";

export class ClusterDirectory extends DurableObject<Env> {
  private record(): DirectoryRecord {
    const kv = this.ctx.storage.kv;
    let record = kv.get<DirectoryRecord>(RECORD_KEY);
    if (record === undefined) {
      record = firstRecord(Date.now());
      kv.put(RECORD_KEY, record);
    }
    return record;
  }

  async read(): Promise<DirectoryRecord> {
    return this.record();
  }

  /** Makes `master` the master of term `expectedTerm + 1`, if the term is still `expectedTerm`. */
  async promote(
    expectedTerm: number,
    master: string,
    handover: HandoverState,
  ): Promise<CasOutcome> {
    const outcome = compareAndSet(this.record(), expectedTerm, master, handover, Date.now());
    if (outcome.ok) this.ctx.storage.kv.put(RECORD_KEY, outcome.record);
    return outcome;
  }

  /** The cluster is being deleted: no master starts until `forget` (workers/cluster-delete.ts). */
  async markDeleting(): Promise<DirectoryRecord> {
    const record: DirectoryRecord = { ...this.record(), deleting: true };
    this.ctx.storage.kv.put(RECORD_KEY, record);
    return record;
  }

  /**
   * Every member is gone: so is the record, but for the term the name goes on
   * from (firstRecord): the next use is a new cluster whose first term comes
   * after every term the deleted one used. Only for the deletion that marked
   * the record at `markedTerm`, and only once.
   */
  async forget(markedTerm: number): Promise<boolean> {
    // Another DELETE of the same deletion finished first, and the name may be in use
    // again: its new cluster is not this deletion's to forget.
    if (!this.deletingAt(markedTerm)) return false;
    await this.ctx.storage.deleteAll();
    this.ctx.storage.kv.put(RECORD_KEY, firstRecord(Date.now(), markedTerm + 1));
    return true;
  }

  /** Whether the deletion that marked the record at `markedTerm` is still under way. */
  async stillDeleting(markedTerm: number): Promise<boolean> {
    return this.deletingAt(markedTerm);
  }

  private deletingAt(markedTerm: number): boolean {
    const record = this.record();
    return record.deleting === true && record.term === markedTerm;
  }

  /** The master of `term` publishes the members and tunables a promotion without it needs. */
  async publish(term: number, master: string, config: ClusterConfig): Promise<CasOutcome> {
    const outcome = publishConfig(this.record(), term, master, config);
    if (outcome.ok) this.ctx.storage.kv.put(RECORD_KEY, outcome.record);
    return outcome;
  }
}

/** Created where DEFAULT_LOCATIONS puts `directory`, if it says. */
export function directoryStub(env: Env, cluster: string): DurableObjectStub<ClusterDirectory> {
  const ns = env.DIRECTORY as unknown as DurableObjectNamespace<ClusterDirectory>;
  return stubWithHint(ns, ns.idFromName(cluster), defaultLocations(env).directory);
}
