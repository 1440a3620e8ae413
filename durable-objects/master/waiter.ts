/**
 * The waiter (Comdb2's async distributed commit): holds every commit waiting
 * for acks — handed off or inline, they share the same rules in the ack book —
 * runs the batched ack-check passes, and resolves the held responses. Acks
 * that arrive in one turn of the event loop are checked in one pass.
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
  /** Replicas the pass found behind a due deadline: the master marks them incoherent. */
  markIncoherent(ids: Set<string>): void;
  /** When the next pass has something to decide (a deadline or a lease expiry). */
  wakeAt(at: number | null): void;
  answered(lsn: number, outcome: Outcome, path: WaitPath, waitedMs: number): void;
  passed(result: PassResult<Held>): void;
}

export class Waiter {
  private readonly book = new AckBook<Held>();
  private passQueued = false;
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
      const { path: _path, bytes: _bytes, ...commit } = request;
      this.book.add({ ...commit, token: held });
      if (this.book.size > this.peak) this.peak = this.book.size;
      this.pass();
    });
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
      this.hooks.wakeAt(null);
      return;
    }
    const now = this.hooks.now();
    const result = this.book.pass(this.view, {
      now,
      durableLsns: this.hooks.durableLsns(),
      sanctionedNow: this.hooks.sanctioned?.(),
    });
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
    this.hooks.wakeAt(result.wakeAt);
  }
}
