import { describe, expect, it } from "vitest";
import { DueQueue } from "../core/due-queue";

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

/** A clock the test moves by hand. */
function fakeClock(start = 0): { now: () => number; set: (t: number) => void } {
  let t = start;
  return { now: () => t, set: (next) => (t = next) };
}

// Delays far beyond the test's run time, so the fallback timer never fires
// while the fake clock is in charge.
const LONG = 600_000;

describe("DueQueue", () => {
  it("releases exactly the items due at drain, in due order", async () => {
    const clock = fakeClock(1000);
    const queue = new DueQueue(clock.now);
    const released: string[] = [];
    void queue.wait(LONG + 30).then(() => released.push("c"));
    void queue.wait(LONG + 10).then(() => released.push("a"));
    void queue.wait(LONG + 20).then(() => released.push("b"));
    expect(queue.size).toBe(3);

    clock.set(1000 + LONG + 9);
    queue.drain();
    await settle();
    expect(released).toEqual([]);
    expect(queue.size).toBe(3);

    clock.set(1000 + LONG + 20);
    queue.drain();
    await settle();
    expect(released).toEqual(["a", "b"]);
    expect(queue.size).toBe(1);

    clock.set(1000 + LONG + 1000);
    queue.drain();
    await settle();
    expect(released).toEqual(["a", "b", "c"]);
    expect(queue.size).toBe(0);
  });

  it("orders items by due time, not by the order wait was called", async () => {
    const clock = fakeClock(0);
    const queue = new DueQueue(clock.now);
    const released: string[] = [];
    void queue.wait(LONG + 50).then(() => released.push("late"));
    clock.set(40);
    void queue.wait(LONG).then(() => released.push("early"));
    clock.set(LONG + 100);
    queue.drain();
    await settle();
    expect(released).toEqual(["early", "late"]);
  });

  it("releases nothing when drained before anything is due", async () => {
    const clock = fakeClock(0);
    const queue = new DueQueue(clock.now);
    let released = false;
    void queue.wait(LONG).then(() => {
      released = true;
    });
    queue.drain();
    await settle();
    expect(released).toBe(false);
    expect(queue.size).toBe(1);
    clock.set(LONG);
    queue.drain();
    await settle();
    expect(released).toBe(true);
  });

  it("resolves wait(0) and negative waits immediately without queueing", async () => {
    const queue = new DueQueue(fakeClock(0).now);
    let zero = false;
    let negative = false;
    void queue.wait(0).then(() => {
      zero = true;
    });
    void queue.wait(-5).then(() => {
      negative = true;
    });
    expect(queue.size).toBe(0);
    await settle();
    expect(zero).toBe(true);
    expect(negative).toBe(true);
  });

  it("releases an item through the fallback timer when nobody drains", async () => {
    const queue = new DueQueue();
    let released = false;
    const waiting = queue.wait(20).then(() => {
      released = true;
    });
    await settle();
    expect(released).toBe(false);
    expect(queue.size).toBe(1);

    let timer: ReturnType<typeof setTimeout> | null = null;
    const gaveUp = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), 2000);
    });
    const winner = await Promise.race([waiting.then(() => "released" as const), gaveUp]);
    clearTimeout(timer);
    expect(winner).toBe("released");
    expect(released).toBe(true);
    expect(queue.size).toBe(0);
  });

  it("re-arms the fallback timer for an earlier item added later", async () => {
    // The real clock, plus a skew the test adds at the end to release the late item.
    let skew = 0;
    const queue = new DueQueue(() => performance.now() + skew);
    const released: string[] = [];
    const late = queue.wait(60_000).then(() => released.push("late"));
    const early = queue.wait(20).then(() => released.push("early"));
    let timer: ReturnType<typeof setTimeout> | null = null;
    const gaveUp = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), 2000);
    });
    const winner = await Promise.race([early.then(() => "released" as const), gaveUp]);
    clearTimeout(timer);
    expect(winner).toBe("released");
    expect(released).toEqual(["early"]);
    expect(queue.size).toBe(1);

    skew = 120_000;
    queue.drain();
    await late;
    expect(released).toEqual(["early", "late"]);
    expect(queue.size).toBe(0);
  });
});

describe("DueQueue with timer slack", () => {
  it("fires the fallback timer the slack after the earliest due time, not at it", async () => {
    const started = performance.now();
    const queue = new DueQueue(undefined, undefined, 150);
    let waited = -1;
    let releasedAt = 0;
    const released = queue.wait(20).then((w) => {
      waited = w;
      releasedAt = performance.now();
    });
    await new Promise((r) => setTimeout(r, 80));
    // Due after 20 ms, but nobody drained and the timer is not due until 170 ms.
    expect(waited).toBe(-1);
    expect(queue.size).toBe(1);
    await released;
    expect(releasedAt - started).toBeGreaterThanOrEqual(160);
    // The item reports how long it really waited.
    expect(waited).toBeGreaterThanOrEqual(160);
  });

  it("a drain still releases what is due at once", async () => {
    const clock = fakeClock(0);
    const queue = new DueQueue(clock.now, undefined, LONG);
    const released: string[] = [];
    void queue.wait(10).then(() => released.push("a"));
    clock.set(10);
    queue.drain();
    await settle();
    expect(released).toEqual(["a"]);
  });
});
