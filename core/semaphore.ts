/**
 * Writer slots: at most `limit` holders, FIFO for the rest. The limit can
 * change at run time (the writer_concurrency tunable); a lower limit takes
 * effect as holders release.
 */
export class Semaphore {
  private holders = 0;
  private readonly queue: (() => void)[] = [];

  constructor(private limit: number) {}

  get busy(): number {
    return this.holders;
  }

  get queued(): number {
    return this.queue.length;
  }

  setLimit(limit: number): void {
    this.limit = limit;
    this.grantWhileRoom();
  }

  /** Takes a slot now if one is free (no await, so nothing else runs in between). */
  tryAcquire(): boolean {
    if (this.holders < this.limit && this.queue.length === 0) {
      this.holders++;
      return true;
    }
    return false;
  }

  acquire(): Promise<void> {
    if (this.holders < this.limit && this.queue.length === 0) {
      this.holders++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.queue.push(resolve));
  }

  release(): void {
    this.holders--;
    this.grantWhileRoom();
  }

  private grantWhileRoom(): void {
    while (this.holders < this.limit) {
      const next = this.queue.shift();
      if (next === undefined) return;
      this.holders++;
      next();
    }
  }
}
