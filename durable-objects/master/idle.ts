/**
 * The master's sleep and wake (scale to zero, core/idle.ts says when): every
 * call that asks something of the master touches it; the heartbeat job puts
 * it to sleep once it has been quiet for idle_after_ms with nothing left to
 * do, and the next touch wakes it, restarting its timed jobs. While it sleeps
 * it sends nothing and has no alarm, so the platform may evict it and every
 * replica; a request that finds it evicted starts it as after a restart.
 */
export interface IdleStatus {
  asleep: boolean;
  /** How long nothing has been asked of it (since it started, if nothing has yet). */
  quietMs: number;
  /** Why it stays awake (the last heartbeat's view), or null while it sleeps. */
  awakeBecause: string | null;
  sleeps: number;
  wakes: number;
}

export class MasterIdle {
  /**
   * The last time something was asked of it; 0 until then. Starting is not
   * activity: a master the platform evicted and an alarm or a status call
   * started again sleeps as soon as it knows its replicas are at its LSN.
   */
  lastActiveAt = 0;
  private readonly startedAt = Date.now();
  asleep = false;
  sleeps = 0;
  wakes = 0;
  awakeBecause: string | null = "just started";

  constructor(private readonly wakeUp: (now: number) => void) {}

  /** Something was asked of the master: it is active now, and awake. */
  touch(now = Date.now()): void {
    this.lastActiveAt = now;
    if (!this.asleep) return;
    this.asleep = false;
    this.wakes++;
    this.awakeBecause = "woken by a request";
    this.wakeUp(now);
  }

  /** The master has stopped its jobs and cleared its alarm. */
  slept(): void {
    this.asleep = true;
    this.sleeps++;
    this.awakeBecause = null;
  }

  status(now: number): IdleStatus {
    return {
      asleep: this.asleep,
      quietMs: now - (this.lastActiveAt === 0 ? this.startedAt : this.lastActiveAt),
      awakeBecause: this.awakeBecause,
      sleeps: this.sleeps,
      wakes: this.wakes,
    };
  }
}
