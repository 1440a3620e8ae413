import { describe, expect, it } from "vitest";
import { Semaphore } from "../core/semaphore";

/** Lets every already-resolved promise run its callbacks. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

/** Starts `count` acquisitions and records the order in which they are granted. */
function acquireMany(semaphore: Semaphore, count: number, granted: number[]): void {
  for (let i = 0; i < count; i++) {
    void semaphore.acquire().then(() => granted.push(i));
  }
}

describe("Semaphore", () => {
  it("grants up to the limit at once and queues the rest", async () => {
    const semaphore = new Semaphore(2);
    const granted: number[] = [];
    acquireMany(semaphore, 5, granted);
    await settle();
    expect(granted).toEqual([0, 1]);
    expect(semaphore.busy).toBe(2);
    expect(semaphore.queued).toBe(3);
  });

  it("hands a released slot to the waiters in FIFO order", async () => {
    const semaphore = new Semaphore(1);
    const granted: number[] = [];
    acquireMany(semaphore, 4, granted);
    await settle();
    expect(granted).toEqual([0]);
    for (const expected of [
      [0, 1],
      [0, 1, 2],
      [0, 1, 2, 3],
    ]) {
      semaphore.release();
      await settle();
      expect(granted).toEqual(expected);
      expect(semaphore.busy).toBe(1);
    }
    expect(semaphore.queued).toBe(0);
    semaphore.release();
    expect(semaphore.busy).toBe(0);
  });

  it("does not let a newcomer overtake queued waiters", async () => {
    const semaphore = new Semaphore(1);
    const order: string[] = [];
    void semaphore.acquire().then(() => order.push("first"));
    void semaphore.acquire().then(() => order.push("queued"));
    await settle();
    semaphore.release();
    void semaphore.acquire().then(() => order.push("newcomer"));
    await settle();
    expect(order).toEqual(["first", "queued"]);
    semaphore.release();
    await settle();
    expect(order).toEqual(["first", "queued", "newcomer"]);
  });

  it("grants queued waiters at once when the limit is raised", async () => {
    const semaphore = new Semaphore(1);
    const granted: number[] = [];
    acquireMany(semaphore, 4, granted);
    await settle();
    expect(granted).toEqual([0]);
    semaphore.setLimit(3);
    await settle();
    expect(granted).toEqual([0, 1, 2]);
    expect(semaphore.busy).toBe(3);
    expect(semaphore.queued).toBe(1);
  });

  it("applies a lower limit as holders release, without revoking held slots", async () => {
    const semaphore = new Semaphore(3);
    const granted: number[] = [];
    acquireMany(semaphore, 5, granted);
    await settle();
    expect(granted).toEqual([0, 1, 2]);

    semaphore.setLimit(1);
    expect(semaphore.busy).toBe(3);

    semaphore.release();
    await settle();
    expect(granted).toEqual([0, 1, 2]);
    expect(semaphore.busy).toBe(2);

    semaphore.release();
    await settle();
    expect(granted).toEqual([0, 1, 2]);
    expect(semaphore.busy).toBe(1);

    semaphore.release();
    await settle();
    expect(granted).toEqual([0, 1, 2, 3]);
    expect(semaphore.busy).toBe(1);
    expect(semaphore.queued).toBe(1);
  });

  it("makes a fresh acquire wait while a lowered limit is still exceeded", async () => {
    const semaphore = new Semaphore(2);
    await semaphore.acquire();
    await semaphore.acquire();
    semaphore.setLimit(1);
    semaphore.release();
    let granted = false;
    void semaphore.acquire().then(() => {
      granted = true;
    });
    await settle();
    expect(granted).toBe(false);
    semaphore.release();
    await settle();
    expect(granted).toBe(true);
  });
});

describe("Semaphore.tryAcquire", () => {
  it("takes a free slot at once and refuses when the slots are taken or others queue", async () => {
    const s = new Semaphore(1);
    expect(s.tryAcquire()).toBe(true);
    expect(s.busy).toBe(1);
    expect(s.tryAcquire()).toBe(false);
    const waiting = s.acquire();
    s.release();
    await waiting;
    expect(s.busy).toBe(1);
    expect(s.tryAcquire()).toBe(false);
    s.release();
    expect(s.tryAcquire()).toBe(true);
  });
});
