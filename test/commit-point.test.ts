import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CommitPoint, type LeaseNode, commitPointBound } from "../core/commit-point";
import { type BarrierTimers, ReadBarrier } from "../core/read-barrier";

const node = (ackedLsn: number, coherent: boolean, leaseUntil: number): LeaseNode => ({
  ackedLsn,
  coherent,
  leaseUntil,
});

describe("commitPointBound", () => {
  const full = { masterLsn: 10, now: 1000, leasesAllowed: true };

  it("is the master's LSN when no node may serve a strong read", () => {
    expect(commitPointBound([], full)).toEqual({ point: 10, changesAt: null });
    // Incoherent, lease over: it serves nothing, so it holds nothing back.
    expect(commitPointBound([node(3, false, 999)], full).point).toBe(10);
  });

  it("counts a coherent replica while leases are granted, with or without a lease now", () => {
    expect(commitPointBound([node(7, true, 0), node(9, true, 2000)], full)).toEqual({
      point: 7,
      changesAt: null,
    });
  });

  it("counts a replica marked incoherent or removed until its last lease expires, and says when that is", () => {
    const nodes = [node(9, true, 2000), node(4, false, 1500)];
    expect(commitPointBound(nodes, full)).toEqual({ point: 4, changesAt: 1500 });
    expect(commitPointBound(nodes, { ...full, now: 1500 })).toEqual({ point: 9, changesAt: null });
  });

  it("while leases are not granted (quorum, none, a switch away from full) only unexpired leases count", () => {
    const nodes = [node(2, true, 0), node(6, true, 1200)];
    const quorum = { ...full, leasesAllowed: false };
    expect(commitPointBound(nodes, quorum)).toEqual({ point: 6, changesAt: 1200 });
    expect(commitPointBound(nodes, { ...quorum, now: 1200 }).point).toBe(10);
  });

  it("never passes an LSN that a node which may serve a strong read has not acked", () => {
    const arbitraryNode = fc.record({
      ackedLsn: fc.integer({ min: 0, max: 50 }),
      coherent: fc.boolean(),
      leaseUntil: fc.integer({ min: 0, max: 2000 }),
    });
    fc.assert(
      fc.property(
        fc.array(arbitraryNode, { maxLength: 8 }),
        fc.integer({ min: 0, max: 50 }),
        fc.integer({ min: 0, max: 2000 }),
        fc.boolean(),
        (nodes, masterLsn, now, leasesAllowed) => {
          const { point, changesAt } = commitPointBound(nodes, { masterLsn, now, leasesAllowed });
          const mayServe = nodes.filter((n) => (n.coherent && leasesAllowed) || now < n.leaseUntil);
          for (const n of mayServe) expect(point).toBeLessThanOrEqual(n.ackedLsn);
          expect(point).toBeLessThanOrEqual(masterLsn);
          // And it is as high as that allows.
          expect(point).toBe(Math.min(masterLsn, ...mayServe.map((n) => n.ackedLsn)));
          if (changesAt !== null) expect(changesAt).toBeGreaterThan(now);
        },
      ),
    );
  });
});

describe("CommitPoint", () => {
  it("keeps the highest bound: one computed from fewer nodes never moves it back", () => {
    const point = new CommitPoint();
    expect(point.advance(5)).toBe(true);
    expect(point.advance(3)).toBe(false);
    expect(point.value).toBe(5);
    expect(point.advance(8)).toBe(true);
    expect(point.value).toBe(8);
  });
});

/** Timers run by hand: `fire` runs every timer due by `at`. */
function manualTimers() {
  let now = 0;
  const pending = new Map<number, { at: number; run: () => void }>();
  let next = 0;
  const timers: BarrierTimers = {
    set: (run, ms) => {
      const id = next++;
      pending.set(id, { at: now + ms, run });
      return id;
    },
    clear: (handle) => pending.delete(handle as number),
  };
  const fire = (at: number) => {
    now = at;
    for (const [id, timer] of [...pending]) {
      if (timer.at <= at) {
        pending.delete(id);
        timer.run();
      }
    }
  };
  return { timers, fire, pending };
}

describe("ReadBarrier", () => {
  it("answers a read at once when the commit point already covers its LSN", async () => {
    const { timers } = manualTimers();
    const barrier = new ReadBarrier(timers);
    barrier.advance(4);
    expect(await barrier.reach(4, 100)).toBe(true);
    expect(barrier.waited).toBe(0);
  });

  it("answers exactly the reads the new commit point covers, and keeps the others waiting", async () => {
    const { timers, pending } = manualTimers();
    const barrier = new ReadBarrier(timers);
    const answered: number[] = [];
    for (const lsn of [7, 3, 5]) {
      void barrier.reach(lsn, 1000).then((reached) => reached && answered.push(lsn));
    }
    barrier.advance(5);
    await Promise.resolve();
    expect(answered.sort()).toEqual([3, 5]);
    expect(barrier.waitingNow).toBe(1);
    expect(pending.size).toBe(1);
    // A lower commit point (an older message arriving late) changes nothing.
    barrier.advance(2);
    expect(barrier.commitPoint).toBe(5);
    barrier.advance(9);
    await Promise.resolve();
    expect(answered.sort()).toEqual([3, 5, 7]);
    expect(pending.size).toBe(0);
  });

  it("gives up on a read whose bound runs out first, and a later commit point does not answer it again", async () => {
    const { timers, fire } = manualTimers();
    const barrier = new ReadBarrier(timers);
    const outcome = barrier.reach(6, 250);
    fire(249);
    expect(barrier.waitingNow).toBe(1);
    fire(250);
    expect(await outcome).toBe(false);
    expect(barrier.timedOut).toBe(1);
    expect(barrier.waitingNow).toBe(0);
    barrier.advance(6);
    expect(barrier.waited).toBe(1);
  });
});
