/**
 * Delays that stay accurate on a busy event loop. workerd fires timers late
 * when its loop is busy, so a delay built on one timer per item stretches
 * exactly under load. Items sit in a queue ordered by due time; `drain` runs
 * on every incoming event and releases what is due, and a single timer at the
 * earliest due time is only the fallback for an idle object.
 */
export class DueQueue {
  private readonly items: { due: number; resolve: () => void }[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private timerDue = Number.POSITIVE_INFINITY;

  constructor(private readonly now: () => number = () => performance.now()) {}

  get size(): number {
    return this.items.length;
  }

  wait(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    const due = this.now() + ms;
    return new Promise((resolve) => {
      let i = this.items.length;
      while (i > 0 && (this.items[i - 1]?.due ?? 0) > due) i--;
      this.items.splice(i, 0, { due, resolve });
      this.arm();
    });
  }

  /** Releases everything due now; call it from every incoming event. */
  drain(): void {
    const now = this.now();
    while (this.items.length > 0 && (this.items[0]?.due ?? Number.POSITIVE_INFINITY) <= now) {
      this.items.shift()?.resolve();
    }
    this.arm();
  }

  private arm(): void {
    const next = this.items[0]?.due;
    if (next === undefined) {
      if (this.timer !== null) clearTimeout(this.timer);
      this.timer = null;
      this.timerDue = Number.POSITIVE_INFINITY;
      return;
    }
    if (this.timer !== null && this.timerDue <= next) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timerDue = next;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.timerDue = Number.POSITIVE_INFINITY;
        this.drain();
      },
      Math.max(0, next - this.now()),
    );
  }
}
