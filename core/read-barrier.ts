/**
 * The read barrier's waiting room, on the master and on every replica: a
 * strong read has already run at some LSN and waits here, without holding the
 * event loop, until the commit point it knows of reaches that LSN, or until its
 * bound runs out. The node feeds it every commit point it learns (the master
 * computes its own; a replica takes the one each message from the master
 * carries). A commit point only grows, so an older one is a safe lower bound.
 */

export interface BarrierTimers {
  set(run: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const realTimers: BarrierTimers = {
  set: (run, ms) => setTimeout(run, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

interface WaitingRead {
  lsn: number;
  resolve: (reached: boolean) => void;
  timer: unknown;
}

export class ReadBarrier {
  private point = 0;
  /** Sorted by LSN, so an advance answers a prefix. */
  private readonly waiting: WaitingRead[] = [];
  /** Reads that had to wait, and those whose bound ran out first (since the node started). */
  waited = 0;
  timedOut = 0;

  constructor(private readonly timers: BarrierTimers = realTimers) {}

  get commitPoint(): number {
    return this.point;
  }

  get waitingNow(): number {
    return this.waiting.length;
  }

  /** A commit point learnt; lower ones than the one known are ignored. */
  advance(point: number): void {
    if (point <= this.point) return;
    this.point = point;
    let answered = 0;
    while (answered < this.waiting.length && (this.waiting[answered]?.lsn ?? 0) <= point) {
      answered++;
    }
    for (const read of this.waiting.splice(0, answered)) {
      this.timers.clear(read.timer);
      read.resolve(true);
    }
  }

  /** Resolves true once the commit point reaches `lsn`, false if `timeoutMs` passes first. */
  reach(lsn: number, timeoutMs: number): Promise<boolean> {
    if (lsn <= this.point) return Promise.resolve(true);
    this.waited++;
    return new Promise((resolve) => {
      const read: WaitingRead = { lsn, resolve, timer: null };
      read.timer = this.timers.set(() => {
        const at = this.waiting.indexOf(read);
        if (at >= 0) this.waiting.splice(at, 1);
        this.timedOut++;
        resolve(false);
      }, timeoutMs);
      let at = this.waiting.length;
      while (at > 0 && (this.waiting[at - 1]?.lsn ?? 0) > lsn) at--;
      this.waiting.splice(at, 0, read);
    });
  }
}
