import { describe, expect, it } from "vitest";
import { LeaseMemory, type MetaStore } from "../durable-objects/master/lease-memory";

/** A meta table in memory that counts its writes; a new LeaseMemory over it is a restart. */
function fakeStore(): MetaStore & { writes: number } {
  const rows = new Map<string, string>();
  const store = {
    writes: 0,
    getMeta: (key: string) => rows.get(key) ?? null,
    setMeta: (key: string, value: string) => {
      store.writes++;
      rows.set(key, value);
    },
  };
  return store;
}

describe("LeaseMemory: the lease horizon", () => {
  it("covers every lease granted with at most one write per lease period", () => {
    const store = fakeStore();
    const memory = new LeaseMemory(store);
    const leaseMs = 500;
    let latest = 0;
    // A grant every 10 ms for 10 s (heartbeats and batches to several replicas).
    for (let now = 0; now < 10_000; now += 10) {
      memory.cover(now + leaseMs, leaseMs, now);
      latest = now + leaseMs;
      expect(new LeaseMemory(store).heldUntil(now, leaseMs)).toBeGreaterThanOrEqual(latest);
    }
    expect(store.writes).toBeLessThanOrEqual(10_000 / leaseMs + 1);
    expect(store.writes).toBeGreaterThan(0);
  });

  it("after a restart, a lease granted before coherency_lease_ms was lowered is still covered", () => {
    const store = fakeStore();
    new LeaseMemory(store).cover(12_000, 10_000, 2_000);
    const restarted = new LeaseMemory(store);
    // The new incarnation runs with a 100 ms lease; the old one granted 10 s.
    expect(restarted.heldUntil(3_000, 100)).toBeGreaterThanOrEqual(12_000);
  });

  it("a longer lease than the horizon covers is written at once", () => {
    const store = fakeStore();
    const memory = new LeaseMemory(store);
    memory.cover(600, 500, 100);
    const writes = store.writes;
    memory.cover(5_200, 5_000, 200);
    expect(store.writes).toBe(writes + 1);
    expect(new LeaseMemory(store).heldUntil(300, 100)).toBeGreaterThanOrEqual(5_200);
  });

  it("a cluster that never wrote a horizon assumes one lease period from start-up", () => {
    expect(new LeaseMemory(fakeStore()).heldUntil(1_000, 500)).toBe(1_500);
  });
});

describe("LeaseMemory: removals", () => {
  it("keeps a removed replica until its lease has run out, across a restart", () => {
    const store = fakeStore();
    const memory = new LeaseMemory(store);
    memory.removed("replica-4", 2_000, 1_000);
    memory.removed("replica-2", 1_500, 1_000);
    const restarted = new LeaseMemory(store);
    expect(restarted.removals(1_200)).toEqual([
      { id: "replica-4", leaseUntil: 2_000 },
      { id: "replica-2", leaseUntil: 1_500 },
    ]);
    expect(restarted.removals(1_500)).toEqual([{ id: "replica-4", leaseUntil: 2_000 }]);
    expect(restarted.removals(2_000)).toEqual([]);
  });

  it("does not keep a removal whose lease is already over, and drops expired ones when it writes", () => {
    const store = fakeStore();
    const memory = new LeaseMemory(store);
    memory.removed("replica-1", 1_100, 1_000);
    memory.removed("replica-3", 900, 1_000);
    memory.removed("replica-5", 3_000, 1_200);
    expect(JSON.parse(store.getMeta("lease_removals") ?? "[]")).toEqual([
      { id: "replica-5", leaseUntil: 3_000 },
    ]);
  });
});
