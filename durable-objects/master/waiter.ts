/**
 * The waiter (Comdb2's async distributed commit): holds every commit waiting
 * for acks — handed off or inline, they share the same rules in the ack book —
 * runs the batched ack-check passes, and resolves the held responses. Acks
 * that arrive in one turn of the event loop are checked in one pass; a new
 * commit is checked on its own (AckBook.checkOne), since its coming changes
 * nothing for the others: a pass over every waiting commit per commit made the
 * waiter's cost grow with the commits waiting (about 20 µs an insert with 256
 * clients waiting, bench:profile).
 */
import {
  AckBook,
  type NodeView,
  type Outcome,
  type PassResult,
  type WaitingCommit,
} from "../../core/ack-book";

export type WaitPath = "handoff" | "inline" | "replay";

/** A commit to hold: the ack book's fields, plus how it got here. */
export type WaitRequest = Omit<WaitingCommit<unknown>, "token" | "acks"> & {
  path: WaitPath;
  /** Bytes of the response held while it waits (counted against waiter_max_held_bytes). */
  bytes?: number;
};

interface Held {
  resolve: (outcome: Outcome) => void;
  path: WaitPath;
  startedAt: number;
  bytes: number;
}

export interface WaiterHooks {
  now(): number;
  durableLsns(): boolean;
  /** The sanctioned replicas now (membership may change while commits wait). */
  sanctioned?(): readonly string[];
  /**
   * Replicas the pass found behind a due deadline: the master marks them
   * incoherent and, as for every mark, asks for a pass (requestPass): the
   * commits this pass examined beside the due one still counted them coherent.
   */
  markIncoherent(ids: Set<string>): void;
  /** When the next pass has something to decide (a deadline or a lease expiry). */
  wakeAt(at: number | null): void;
  answered(lsn: number, outcome: Outcome, path: WaitPath, waitedMs: number): void;
  passed(result: PassResult<Held>): void;
}

export class Waiter {
  private readonly book = new AckBook<Held>();
  private passQueued = false;
  /** When the waiter asked to be woken next (hooks.wakeAt), null for never. */
  private plannedWake: number | null = null;
  /** Handed-off commits still waiting: what async_dist_commit_max_outstanding caps. */
  handedOffNow = 0;
  /** Replays waiting now (they hold no writer slot, so they count here). */
  replaysNow = 0;
  /** Bytes of the responses held for handed-off commits and replays. */
  heldBytes = 0;
  peak = 0;
  passes = 0;
  /** Commits whose wait set a pass examined (answered ones included). */
  checked = 0;
  answered = 0;
  comparisons = 0;
  skippedEarlyStop = 0;

  constructor(
    private readonly view: NodeView,
    private readonly hooks: WaiterHooks,
  ) {}

  get outstanding(): number {
    return this.book.size;
  }

  oldestLsn(): number | null {
    return this.book.oldestLsn();
  }

  /** Holds a commit until its outcome is known; the pass that may answer it runs now. */
  wait(request: WaitRequest): Promise<Outcome> {
    return new Promise((resolve) => {
      const bytes = request.path === "inline" ? 0 : (request.bytes ?? 0);
      const held: Held = { resolve, path: request.path, startedAt: this.hooks.now(), bytes };
      if (request.path === "handoff") this.handedOffNow++;
      if (request.path === "replay") this.replaysNow++;
      this.heldBytes += bytes;
      const { path: _path, bytes: _bytes, ...fields } = request;
      const commit: WaitingCommit<Held> = { ...fields, token: held };
      this.book.add(commit);
      if (this.book.size > this.peak) this.peak = this.book.size;
      // A wake the timer has not delivered yet (timers run late on a busy
      // event loop) is taken now: every commit that comes makes the full pass
      // whose time has come.
      const now = this.hooks.now();
      if (this.plannedWake !== null && now >= this.plannedWake) this.pass();
      else this.checkNew(commit, now);
    });
  }

  private checkNew(commit: WaitingCommit<Held>, now: number): void {
    const result = this.book.checkOne(commit, this.view, this.options(now));
    this.apply(result, now);
    // This commit's wake only ever brings the planned one forward.
    if (this.book.size === 0) this.planWake(null);
    else if (
      result.wakeAt !== null &&
      (this.plannedWake === null || result.wakeAt < this.plannedWake)
    ) {
      this.planWake(result.wakeAt);
    }
  }

  /** A replica that became coherent joins every wait it has not acked. */
  joinWaits(id: string, ackedLsn: number): void {
    this.book.joinWaits(id, ackedLsn);
  }

  /** Back to full sync: waiting quorum commits wait for every node in `mayServe` (AckBook). */
  adoptFullSync(mayServe: Iterable<string>): void {
    this.book.adoptFullSync(mayServe, this.view);
    this.requestPass();
  }

  /** Acks arrived: one pass at the end of this turn covers all of them. */
  requestPass(): void {
    if (this.passQueued) return;
    this.passQueued = true;
    queueMicrotask(() => {
      this.passQueued = false;
      this.pass();
    });
  }

  pass(): void {
    if (this.book.size === 0) {
      this.planWake(null);
      return;
    }
    const now = this.hooks.now();
    const result = this.book.pass(this.view, this.options(now));
    this.apply(result, now);
    this.planWake(result.wakeAt);
  }

  private options(now: number) {
    return { now, durableLsns: this.hooks.durableLsns(), sanctionedNow: this.hooks.sanctioned?.() };
  }

  private planWake(at: number | null): void {
    this.plannedWake = at;
    this.hooks.wakeAt(at);
  }

  /** Counts a pass (or a new commit's check), marks, and resolves what it answered. */
  private apply(result: PassResult<Held>, now: number): void {
    this.passes++;
    this.comparisons += result.comparisons;
    this.checked += result.checked;
    this.answered += result.answered.length;
    this.skippedEarlyStop += result.skippedEarlyStop;
    if (result.markIncoherent.size > 0) this.hooks.markIncoherent(result.markIncoherent);
    for (const { commit, outcome } of result.answered) {
      const held = commit.token;
      if (held.path === "handoff") this.handedOffNow--;
      if (held.path === "replay") this.replaysNow--;
      this.heldBytes -= held.bytes;
      this.hooks.answered(commit.lsn, outcome, held.path, now - held.startedAt);
      held.resolve(outcome);
    }
    this.hooks.passed(result);
  }
}
