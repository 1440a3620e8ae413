/**
 * A replica's terms (core/terms.ts): the highest it has seen, and the highest
 * whose first LSN it has checked its log against, each kept in storage before
 * anything of that term is applied.
 */
import { type TermVerdict, judgeTerm } from "../../core/terms";

export class ReplicaTerms {
  private knownTerm: number;
  private checkedTerm: number;

  constructor(private readonly kv: SyncKvStorage) {
    this.knownTerm = Number(kv.get<string>("m:term") ?? 0);
    this.checkedTerm = Number(kv.get<string>("m:term_checked") ?? this.knownTerm);
  }

  get known(): number {
    return this.knownTerm;
  }

  judge(message: { term: number; termStartLsn: number }, appliedLsn: number): TermVerdict {
    return judgeTerm(this.knownTerm, this.checkedTerm, message, appliedLsn);
  }

  /** A message of `term` was judged: its term is known and checked from now on. */
  adopt(term: number): void {
    this.knownTerm = term;
    this.checkedTerm = term;
    this.kv.put("m:term", String(term));
    this.kv.put("m:term_checked", String(term));
  }

  /**
   * This node's log is known to be the master of `term`'s (a snapshot it sent
   * was installed). A later term known already keeps its own check to come.
   */
  checked(term: number): void {
    if (term <= this.checkedTerm) return;
    this.checkedTerm = term;
    this.kv.put("m:term_checked", String(term));
    if (term > this.knownTerm) {
      this.knownTerm = term;
      this.kv.put("m:term", String(term));
    }
  }

  /**
   * Known ahead of its first message (a promotion's fence, a snapshot):
   * whether it was later than the term known until now.
   */
  learn(term: number): boolean {
    if (term <= this.knownTerm) return false;
    this.knownTerm = term;
    this.kv.put("m:term", String(term));
    return true;
  }
}
