/**
 * The reference the Waiter is raced against (test/waiter-race.test.ts): the
 * same ack book, but a full pass over every waiting commit at every new commit,
 * as the Waiter once made. It answers each commit at the earliest moment the
 * book's rules allow, given the passes the master asks for; the Waiter must
 * answer every commit at the same moment with a check of the new commit alone.
 */
import { AckBook, type NodeView, type Outcome } from "../core/ack-book";
import type { WaiterHooks, WaitRequest } from "../durable-objects/master/waiter";

type Hooks = Pick<WaiterHooks, "now" | "durableLsns" | "sanctioned" | "markIncoherent" | "wakeAt">;

export class FullPassWaiter {
  private readonly book = new AckBook<(outcome: Outcome) => void>();
  private passQueued = false;

  constructor(
    private readonly view: NodeView,
    private readonly hooks: Hooks,
  ) {}

  wait(request: WaitRequest): Promise<Outcome> {
    return new Promise((resolve) => {
      const { path: _path, bytes: _bytes, ...fields } = request;
      this.book.add({ ...fields, token: resolve });
      this.pass();
    });
  }

  joinWaits(id: string, ackedLsn: number): void {
    this.book.joinWaits(id, ackedLsn);
  }

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
    const result = this.book.pass(this.view, {
      now: this.hooks.now(),
      durableLsns: this.hooks.durableLsns(),
      sanctionedNow: this.hooks.sanctioned?.(),
    });
    if (result.markIncoherent.size > 0) {
      this.hooks.markIncoherent(result.markIncoherent);
      this.requestPass();
    }
    for (const { commit, outcome } of result.answered) commit.token(outcome);
    this.hooks.wakeAt(result.wakeAt);
  }
}
