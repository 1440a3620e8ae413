/**
 * relay_call_gap_ms for one relay: when a further batch call may go while one
 * is out. Over a link whose recent round trips all took the gap or more, once
 * the newest call has been out the gap: calls then overlap, a batch every gap,
 * instead of every record waiting for the call before. Over a faster link the
 * call out comes back first and carries everything (one call batches best).
 * A gap of 0 lets calls go whenever relay_calls_in_flight allows.
 */
import { RecentRtt } from "../../core/recent-rtt";

export class CallGap {
  /** Calls carrying records not answered yet, and when the newest of them went. */
  private batchesOut = 0;
  private lastBatchAt = 0;
  private readonly rtt = new RecentRtt();
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly gapMs: () => number,
    /** Called when records held back by the gap may go. */
    private readonly passedLater: () => void,
  ) {}

  sent(at: number): void {
    this.batchesOut++;
    this.lastBatchAt = at;
  }

  /** A call carrying records came back (answered or failed). */
  batchAnswered(): void {
    this.batchesOut--;
  }

  /** A call that the replica answered at once (any but a held-ack fetch) took this long. */
  roundTrip(ms: number, at: number): void {
    this.rtt.note(ms, at);
  }

  passed(now: number): boolean {
    const gap = this.gapMs();
    if (gap <= 0 || this.batchesOut === 0) return true;
    return now - this.lastBatchAt >= gap && this.rtt.min(now) >= gap;
  }

  /** Records are waiting: over a slow link they go once the gap has passed, commits or not. */
  waitOut(now: number): void {
    if (this.timer !== null || this.passed(now)) return;
    // A fast link: the call out comes back first, and its answer sends them.
    if (this.rtt.min(now) < this.gapMs()) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.passedLater();
      },
      this.gapMs() - (now - this.lastBatchAt),
    );
  }
}
