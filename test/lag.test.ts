import { describe, expect, it } from "vitest";
import { LagTracker } from "../core/lag";

describe("LagTracker (lag that grows until the ack, on the master's clock)", () => {
  it("is 0 when nothing is outstanding", () => {
    const lag = new LagTracker();
    expect(lag.lagMs(1_000)).toBe(0);
    expect(lag.oldestSentAt()).toBeNull();
  });

  it("grows with every read while a batch is unacked, anchored at the oldest send", () => {
    const lag = new LagTracker();
    lag.sent(10, 1_000);
    lag.sent(20, 1_050);
    expect(lag.lagMs(1_100)).toBe(100);
    expect(lag.lagMs(1_400)).toBe(400);
    expect(lag.lagMs(2_000)).toBe(1_000);
  });

  it("an ack corrects it to the oldest batch still unacked, and to 0 when all are", () => {
    const lag = new LagTracker();
    lag.sent(10, 1_000);
    lag.sent(20, 1_050);
    lag.sent(30, 1_200);
    lag.acked(20);
    expect(lag.size).toBe(1);
    expect(lag.lagMs(1_300)).toBe(100);
    lag.acked(30);
    expect(lag.lagMs(5_000)).toBe(0);
  });

  it("an ack inside a batch does not cover that batch", () => {
    const lag = new LagTracker();
    lag.sent(10, 1_000);
    lag.acked(9);
    expect(lag.lagMs(1_500)).toBe(500);
  });

  it("never goes negative when the clock reads earlier than a send", () => {
    const lag = new LagTracker();
    lag.sent(1, 2_000);
    expect(lag.lagMs(1_990)).toBe(0);
  });

  it("reset empties the window, and what was sent stays behind until an ack covers it", () => {
    const lag = new LagTracker();
    lag.sent(1, 0);
    lag.sent(5, 50);
    lag.reset(0);
    expect(lag.size).toBe(0);
    expect(lag.lagMs(100)).toBe(0);
    expect(lag.behindMs(100)).toBe(100);
    // The stream fails again and again (a stopped replica): the lag keeps growing.
    lag.sent(9, 200);
    lag.reset(0);
    expect(lag.behindMs(1_000)).toBe(1_000);
    // An ack of 5 leaves records 6-9, first sent at 200.
    lag.acked(5);
    expect(lag.behindMs(1_000)).toBe(800);
    lag.acked(9);
    expect(lag.behindMs(1_000)).toBe(0);
  });

  it("records due and unsent (position unknown, stream down) count from when they became due", () => {
    const lag = new LagTracker();
    // A restarted master: nothing sent, a record due at 100 that the replica never acks.
    lag.due(3, 100);
    expect(lag.lagMs(900)).toBe(0);
    expect(lag.behindMs(900)).toBe(800);
    // More records due later keep the first time; a record resent after a restart too.
    lag.due(5, 400);
    lag.sent(5, 500);
    expect(lag.behindMs(900)).toBe(800);
    lag.acked(3);
    expect(lag.behindMs(900)).toBe(500);
    lag.acked(5);
    expect(lag.behindMs(900)).toBe(0);
  });

  it("keeps a bounded list across many restarts, never under-stating the lag", () => {
    const lag = new LagTracker();
    for (let i = 1; i <= 500; i++) {
      lag.sent(i, i * 10);
      lag.reset(0);
    }
    expect(lag.behindMs(10_000)).toBe(10_000 - 10);
    // The oldest are kept exactly: an ack of 40 leaves 41, first sent at 410.
    lag.acked(40);
    expect(lag.behindMs(10_000)).toBe(10_000 - 410);
    lag.acked(250);
    expect(lag.behindMs(10_000)).toBeGreaterThanOrEqual(10_000 - 2_510);
    lag.acked(500);
    expect(lag.behindMs(10_000)).toBe(0);
  });

  it("a reset at the LSN a snapshot installed leaves nothing behind", () => {
    const lag = new LagTracker();
    lag.sent(3, 0);
    lag.reset(10);
    expect(lag.behindMs(500)).toBe(0);
  });
});
