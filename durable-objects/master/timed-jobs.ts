/**
 * The master's timed jobs behind one scheduler: one in-memory timer at the
 * earliest job (exact timing) and the DO alarm following it as the durable
 * backstop that wakes an evicted master. The alarm is set no closer than
 * ALARM_MIN_LEAD_MS ahead and only rewritten when it must move earlier by more
 * than that, because every setAlarm is a storage write.
 */
import { Scheduler } from "../../core/scheduler";

export const ALARM_MIN_LEAD_MS = 1_000;

export class TimedJobs {
  private readonly scheduler = new Scheduler();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private timerAt = Number.POSITIVE_INFINITY;
  private alarmAt: number | null = null;

  constructor(
    private readonly setAlarm: (at: number) => void,
    private readonly run: (job: string, now: number) => void,
    private readonly deleteAlarm: () => void = () => {},
  ) {}

  at(job: string, at: number): void {
    this.scheduler.at(job, at);
    this.arm();
  }

  cancel(job: string): void {
    this.scheduler.cancel(job);
  }

  /** Nothing more runs (the master stepped down); a stale alarm finds nothing due. */
  cancelAll(): void {
    this.scheduler.clear();
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  /**
   * The master sleeps (core/idle.ts): no job is left, and the alarm goes too,
   * so nothing wakes the object until a request does.
   */
  sleep(): void {
    this.cancelAll();
    this.alarmAt = null;
    this.deleteAlarm();
  }

  /** The DO alarm fired: run what is due and re-arm. */
  onAlarm(): void {
    this.alarmAt = null;
    this.dispatch();
  }

  private dispatch(): void {
    const now = Date.now();
    for (const job of this.scheduler.due(now)) this.run(job, now);
    this.arm();
  }

  private arm(): void {
    const next = this.scheduler.next();
    if (next === null) return;
    if (this.timer === null || next < this.timerAt) {
      if (this.timer !== null) clearTimeout(this.timer);
      this.timerAt = next;
      this.timer = setTimeout(
        () => {
          this.timer = null;
          this.timerAt = Number.POSITIVE_INFINITY;
          this.dispatch();
        },
        Math.max(0, next - Date.now()),
      );
    }
    const alarmAt = Math.max(next, Date.now() + ALARM_MIN_LEAD_MS);
    if (this.alarmAt === null || alarmAt < this.alarmAt - ALARM_MIN_LEAD_MS) {
      this.alarmAt = alarmAt;
      this.setAlarm(alarmAt);
    }
  }
}
