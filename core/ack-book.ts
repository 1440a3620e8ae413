/**
 * Ack bookkeeping for commits waiting on replicas: the full-sync rules in one
 * pure place, shared by the inline wait and the waiter (Comdb2's "shared
 * finish step"). The master feeds it acks and the clock and applies the
 * effects it returns (answer a commit, mark a replica incoherent, wake later).
 *
 * An ack is a replica's applied LSN and covers every earlier LSN, so a node's
 * progress is one number. A commit is answered when every node of its wait set
 * acked at or past its LSN. A node that misses the deadline is marked
 * incoherent, but it leaves a wait set only once the read lease it may still
 * hold has expired: until then it could serve a strong read without the commit.
 */

export interface NodeView {
  ackedLsn(id: string): number;
  isCoherent(id: string): boolean;
  /** Master-clock instant until which the node may hold a read lease. */
  leaseUntil(id: string): number;
}

export interface WaitingCommit<T> {
  lsn: number;
  /** Nodes still to ack: the coherent replicas when the wait began, minus those done. */
  waitSet: Set<string>;
  /** The sanctioned replicas when the wait began (durability counts only these). */
  sanctioned: readonly string[];
  /** rep_timeout_ms after the wait began. */
  deadline: number;
  /** commit_timeout_ms after the wait began: answered COMMIT_TIMEOUT past this. */
  giveUpAt: number;
  /**
   * sync_mode quorum: answered once this many nodes of the wait set acked (or
   * every node still in it, if fewer remain). Undefined: every node (full sync).
   */
  quorum?: number;
  /** Nodes of the wait set that acked so far (maintained by the book). */
  acks?: number;
  token: T;
}

export type Outcome = "acked" | "not-durable" | "timeout";

export interface PassResult<T> {
  answered: { commit: WaitingCommit<T>; outcome: Outcome }[];
  /** Replicas that missed a deadline while behind: the master marks them incoherent. */
  markIncoherent: Set<string>;
  /** Earliest instant a pass has something new to decide, or null when nothing waits. */
  wakeAt: number | null;
  /** Commits whose wait set was examined. */
  checked: number;
  /** Ack comparisons made (node acked LSN against commit LSN). */
  comparisons: number;
  skippedEarlyStop: number;
}

export interface PassOptions {
  now: number;
  durableLsns: boolean;
  /**
   * The sanctioned nodes now, when they may differ from a commit's: with
   * durable_lsns a commit must be on a majority of both, so a membership
   * change while it waits cannot leave it on a minority of the members a
   * promotion would count.
   */
  sanctionedNow?: readonly string[];
}

/** Majority of the sanctioned nodes, the master counted as one. */
export function isDurable(lsn: number, sanctioned: readonly string[], view: NodeView): boolean {
  let acks = 1;
  for (const id of sanctioned) if (view.ackedLsn(id) >= lsn) acks++;
  return acks * 2 > sanctioned.length + 1;
}

function emptyResult<T>(): { result: PassResult<T>; wake: (at: number) => void } {
  const result: PassResult<T> = {
    answered: [],
    markIncoherent: new Set(),
    wakeAt: null,
    checked: 0,
    comparisons: 0,
    skippedEarlyStop: 0,
  };
  const wake = (at: number) => {
    if (result.wakeAt === null || at < result.wakeAt) result.wakeAt = at;
  };
  return { result, wake };
}

export class AckBook<T> {
  /** Sorted by LSN; a replayed request may wait on an older LSN, so insertion keeps order. */
  private waiting: WaitingCommit<T>[] = [];

  get size(): number {
    return this.waiting.length;
  }

  oldestLsn(): number | null {
    return this.waiting[0]?.lsn ?? null;
  }

  add(commit: WaitingCommit<T>): void {
    let i = this.waiting.length;
    while (i > 0 && (this.waiting[i - 1]?.lsn ?? 0) > commit.lsn) i--;
    this.waiting.splice(i, 0, commit);
  }

  /** A replica that became coherent joins the wait of every commit it has not acked. */
  joinWaits(id: string, ackedLsn: number): void {
    for (const commit of this.waiting) if (commit.lsn > ackedLsn) commit.waitSet.add(id);
  }

  /**
   * sync_mode is back to full: commits still waiting under quorum rules switch
   * to full's. Leases are granted again from now on, to every coherent replica,
   * so a commit answered on a quorum could miss one that is serving strong
   * reads: each now waits for every node of `mayServe` it has not been acked by.
   */
  adoptFullSync(mayServe: Iterable<string>, view: NodeView): void {
    const nodes = [...mayServe];
    for (const commit of this.waiting) {
      if (commit.quorum === undefined) continue;
      delete commit.quorum;
      for (const id of nodes) if (view.ackedLsn(id) < commit.lsn) commit.waitSet.add(id);
    }
  }

  /** Removes every commit (used when the master shuts down its waits). */
  drain(): WaitingCommit<T>[] {
    const all = this.waiting;
    this.waiting = [];
    return all;
  }

  /**
   * One pass in LSN order. Early stop: once a node is found behind commit L it
   * is behind every later commit too, so later commits waiting on it are not
   * re-checked, unless their deadline is due; commits waiting only on other
   * nodes are still checked and answered in the same pass.
   */
  pass(view: NodeView, options: PassOptions): PassResult<T> {
    const { result, wake } = emptyResult<T>();
    const behind = new Set<string>();
    const keep: WaitingCommit<T>[] = [];
    for (const commit of this.waiting) {
      const outcome = this.decide(commit, view, options, behind, result, wake);
      if (outcome === null) keep.push(commit);
      else result.answered.push({ commit, outcome });
    }
    // A new array, not splice(0, n, ...keep): spreading 100k+ commits into one
    // call's arguments overflows the stack.
    this.waiting = keep;
    for (const commit of keep) wake(commit.giveUpAt);
    return result;
  }

  /**
   * The rules applied to one commit just added, and to no other: nothing about
   * the commits already waiting changed when it came (acks, leases and the
   * clock bring their own passes), so a new commit costs a check of its own
   * wait set instead of a pass over every commit waiting. `wakeAt` is when
   * this commit has something new to decide.
   */
  checkOne(commit: WaitingCommit<T>, view: NodeView, options: PassOptions): PassResult<T> {
    const { result, wake } = emptyResult<T>();
    const outcome = this.decide(commit, view, options, new Set(), result, wake);
    if (outcome === null) {
      wake(commit.giveUpAt);
      return result;
    }
    const at = this.waiting.lastIndexOf(commit);
    if (at >= 0) this.waiting.splice(at, 1);
    result.answered.push({ commit, outcome });
    return result;
  }

  private decide(
    commit: WaitingCommit<T>,
    view: NodeView,
    { now, durableLsns, sanctionedNow }: PassOptions,
    behind: Set<string>,
    result: PassResult<T>,
    wake: (at: number) => void,
  ): Outcome | null {
    if (now >= commit.giveUpAt) return "timeout";
    const due = now >= commit.deadline;
    const quorum = commit.quorum;
    if (!due && quorum === undefined) {
      for (const id of commit.waitSet) {
        if (behind.has(id)) {
          result.skippedEarlyStop++;
          wake(commit.deadline);
          return null;
        }
      }
    }
    result.checked++;
    for (const id of commit.waitSet) {
      result.comparisons++;
      if (view.ackedLsn(id) >= commit.lsn) {
        commit.waitSet.delete(id);
        commit.acks = (commit.acks ?? 0) + 1;
        continue;
      }
      if (due && view.isCoherent(id)) result.markIncoherent.add(id);
      const incoherent = due || !view.isCoherent(id);
      if (incoherent && now >= view.leaseUntil(id)) {
        commit.waitSet.delete(id);
        continue;
      }
      behind.add(id);
      if (incoherent) wake(view.leaseUntil(id));
    }
    const enough =
      commit.waitSet.size === 0 || (quorum !== undefined && (commit.acks ?? 0) >= quorum);
    if (!enough) {
      if (!due) wake(commit.deadline);
      return null;
    }
    const durable =
      isDurable(commit.lsn, commit.sanctioned, view) &&
      (sanctionedNow === undefined || isDurable(commit.lsn, sanctionedNow, view));
    if (!durableLsns || durable) return "acked";
    if (due) return "not-durable";
    wake(commit.deadline);
    return null;
  }
}
