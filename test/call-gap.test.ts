/**
 * relay_call_gap_ms (master/call-gap.ts): a further batch call overlaps the
 * one out only over a link whose recent round trips all took the gap or more,
 * and only once the newest call has been out the gap.
 */
import { describe, expect, it } from "vitest";
import { RecentRtt } from "../core/recent-rtt";
import { CallGap } from "../durable-objects/master/call-gap";

describe("the shortest recent round trip", () => {
  it("is 0 before any, the minimum within the window, else the newest", () => {
    const rtt = new RecentRtt(1_000);
    expect(rtt.min(0)).toBe(0);
    rtt.note(3, 0);
    rtt.note(40, 500);
    rtt.note(45, 900);
    expect(rtt.min(900)).toBe(3);
    // The fast one is older than the window: the link is slow now.
    expect(rtt.min(1_200)).toBe(40);
    // Nothing within the window: the newest counts.
    expect(rtt.min(5_000)).toBe(45);
  });

  it("keeps a bounded number of samples", () => {
    const rtt = new RecentRtt(1_000_000, 4);
    rtt.note(1, 0);
    for (let i = 1; i <= 4; i++) rtt.note(50, i);
    expect(rtt.min(10)).toBe(50);
  });
});

describe("when a further batch call may go", () => {
  const gapOf = (ms: number) =>
    new CallGap(
      () => ms,
      () => {},
    );

  it("always with a gap of 0, and whenever no batch is out", () => {
    const zero = gapOf(0);
    zero.sent(0);
    expect(zero.passed(0)).toBe(true);
    expect(gapOf(10).passed(0)).toBe(true);
  });

  it("never over a link not known to be slow: the call out comes back first", () => {
    const gap = gapOf(10);
    gap.sent(0);
    expect(gap.passed(1_000)).toBe(false);
    gap.batchAnswered();
    gap.roundTrip(2, 1_000);
    gap.sent(1_000);
    expect(gap.passed(1_500)).toBe(false);
  });

  it("over a slow link, once the newest call has been out the gap", () => {
    const gap = gapOf(10);
    gap.sent(0);
    gap.batchAnswered();
    gap.roundTrip(25, 25);
    gap.sent(100);
    expect(gap.passed(105)).toBe(false);
    expect(gap.passed(110)).toBe(true);
    // One fast round trip among the recent ones: the link is not slow after all.
    gap.roundTrip(4, 120);
    expect(gap.passed(300)).toBe(false);
  });

  it("sends what waits once the gap has passed over a slow link, and not over a fast one", async () => {
    let woken = 0;
    const make = (rttMs: number) => {
      const gap = new CallGap(
        () => 20,
        () => woken++,
      );
      gap.roundTrip(rttMs, Date.now());
      gap.sent(Date.now());
      gap.waitOut(Date.now());
    };
    make(30);
    make(2);
    await new Promise((r) => setTimeout(r, 80));
    expect(woken).toBe(1);
  });
});
