/**
 * Delays that stay accurate on a busy event loop. workerd fires timers late
 * when its loop is busy, so a delay built on one timer per item stretches
 * exactly under load. Items sit in a queue ordered by due time; `drain` runs
 * on every incoming event and releases what is due, and a single timer at the
 * earliest due time is only the fallback for an idle object.
 *
 * Callbacks run synchronously inside `drain`, so the caller knows, when drain
 * returns, everything that fell due (a replica piggybacks due acks on the reply
 * it is about to send). `onTimerDrain` runs after a drain the timer did.
 * `timerSlackMs` sets the fallback timer that much after the earliest due time:
 * an owner that expects an incoming event soon (which drains) lets the timer
 * fire only when none came, instead of once per item.
 */
export class DueQueue {
  private readonly items: { due: number; queuedAt: number; release: (waited: number) => void }[] =
    [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private timerDue = Number.POSITIVE_INFINITY;

  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly onTimerDrain: () => void = () => {},
    private readonly timerSlackMs = 0,
  ) {}

  get size(): number {
    return this.items.length;
  }

  /** Calls `release` with how long the item really waited, once `ms` have passed. */
  add(ms: number, release: (waited: number) => void): void {
    const queuedAt = this.now();
    const due = queuedAt + Math.max(0, ms);
    let i = this.items.length;
    while (i > 0 && (this.items[i - 1]?.due ?? 0) > due) i--;
    this.items.splice(i, 0, { due, queuedAt, release });
    this.arm();
  }

  /** Resolves with how long the item really waited (the effective delay). */
  wait(ms: number): Promise<number> {
    if (ms <= 0) return Promise.resolve(0);
    return new Promise((resolve) => this.add(ms, resolve));
  }

  /** Releases everything due now; call it from every incoming event. */
  drain(): void {
    this.release(0);
  }

  /** Releases what is due `slackMs` ago or earlier (the timer leaves fresher items to events). */
  private release(slackMs: number): void {
    const now = this.now() - slackMs;
    while (this.items.length > 0 && (this.items[0]?.due ?? Number.POSITIVE_INFINITY) <= now) {
      const item = this.items.shift();
      item?.release(now + slackMs - item.queuedAt);
    }
    this.arm();
  }

  private arm(): void {
    const earliest = this.items[0]?.due;
    if (earliest === undefined) {
      if (this.timer !== null) clearTimeout(this.timer);
      this.timer = null;
      this.timerDue = Number.POSITIVE_INFINITY;
      return;
    }
    const next = earliest + this.timerSlackMs;
    if (this.timer !== null && this.timerDue <= next) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timerDue = next;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.timerDue = Number.POSITIVE_INFINITY;
        this.release(this.timerSlackMs);
        this.onTimerDrain();
      },
      Math.max(0, next - this.now()),
    );
  }
}
