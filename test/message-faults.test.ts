import { describe, expect, it } from "vitest";
import {
  LinkQueue,
  type MessageFaultConfig,
  NO_MESSAGE_FAULTS,
  createRng,
  decideFault,
  faultKinds,
  faultsActive,
} from "../core/message-faults";

const config = (patch: Partial<MessageFaultConfig>): MessageFaultConfig => ({
  ...NO_MESSAGE_FAULTS,
  delayMs: 40,
  ...patch,
});

function decisions(c: MessageFaultConfig, n: number, ...salt: (string | number)[]) {
  const rng = createRng(c.seed, ...salt);
  return Array.from({ length: n }, () => decideFault(rng, c));
}

describe("createRng (the seeded PRNG)", () => {
  it("gives the same sequence for the same seed and salts, in [0, 1)", () => {
    const a = createRng(7, "replica-1", 3);
    const b = createRng(7, "replica-1", 3);
    const xs = Array.from({ length: 1000 }, () => a());
    expect(Array.from({ length: 1000 }, () => b())).toEqual(xs);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(new Set(xs).size).toBeGreaterThan(990);
  });

  it("gives different sequences for a different seed, replica or term", () => {
    const first = (rng: () => number) => Array.from({ length: 5 }, () => rng());
    const base = first(createRng(7, "replica-1", 3));
    expect(first(createRng(8, "replica-1", 3))).not.toEqual(base);
    expect(first(createRng(7, "replica-2", 3))).not.toEqual(base);
    expect(first(createRng(7, "replica-1", 4))).not.toEqual(base);
  });
});

describe("decideFault", () => {
  it("injects nothing when every probability is 0", () => {
    expect(faultsActive(NO_MESSAGE_FAULTS)).toBe(false);
    for (const d of decisions(config({ seed: 1 }), 500)) expect(faultKinds(d)).toEqual([]);
  });

  it("is deterministic given the seed", () => {
    const c = config({ seed: 42, drop: 0.2, delay: 0.2, duplicate: 0.2, reorder: 0.2 });
    expect(decisions(c, 200, "replica-3", 1)).toEqual(decisions(c, 200, "replica-3", 1));
  });

  it("injects each kind at about its probability", () => {
    const c = config({ seed: 9, drop: 0.1, delay: 0.3, duplicate: 0.05, reorder: 0.2 });
    expect(faultsActive(c)).toBe(true);
    const n = 20_000;
    const counts = { drop: 0, delay: 0, duplicate: 0, reorder: 0 };
    const sides = { request: 0, reply: 0 };
    for (const d of decisions(c, n)) {
      for (const kind of faultKinds(d)) counts[kind]++;
      if (d.drop !== null) sides[d.drop]++;
    }
    // A dropped message gets no other fault, so the others apply to the 90% that are delivered.
    expect(counts.drop / n).toBeCloseTo(0.1, 1);
    expect(counts.delay / n).toBeCloseTo(0.3 * 0.9, 1);
    expect(counts.duplicate / n).toBeCloseTo(0.05 * 0.9, 1);
    expect(counts.reorder / n).toBeCloseTo(0.2 * 0.9, 1);
    expect(sides.request / counts.drop).toBeCloseTo(0.5, 1);
  });

  it("delays between delayMs / 2 and delayMs; reorders and late duplicates by delayMs", () => {
    const c = config({ seed: 5, delay: 1, duplicate: 1, reorder: 1, delayMs: 100 });
    for (const d of decisions(c, 500)) {
      expect(d.delayMs).toBeGreaterThanOrEqual(50);
      expect(d.delayMs).toBeLessThanOrEqual(100);
      expect(d.reorderMs).toBe(100);
      expect(d.duplicateAfterMs).toBe(100);
    }
  });

  it("a drop of probability 1 loses every message, never anything else", () => {
    for (const d of decisions(config({ seed: 3, drop: 1, delay: 1 }), 100)) {
      expect(faultKinds(d)).toEqual(["drop"]);
    }
  });
});

describe("LinkQueue (the order held-back messages leave in)", () => {
  it("lets ready in-order items leave in order", () => {
    const q = new LinkQueue<string>();
    q.push("a", 0, true);
    q.push("b", 0, true);
    expect(q.due(0)).toEqual(["a", "b"]);
    expect(q.size).toBe(0);
    expect(q.nextAt()).toBeNull();
  });

  it("a delayed in-order item holds up the ones behind it, then they leave together", () => {
    const q = new LinkQueue<string>();
    q.push("slow", 100, true);
    q.push("next", 10, true);
    expect(q.due(50)).toEqual([]);
    // The one behind is ready but waits: the next event is the delayed one's time.
    expect(q.nextAt()).toBe(100);
    expect(q.due(100)).toEqual(["slow", "next"]);
  });

  it("a reordered item is overtaken by what is sent while it is held", () => {
    const q = new LinkQueue<string>();
    q.push("held", 100, false);
    q.push("b", 10, true);
    q.push("c", 20, true);
    expect(q.due(20)).toEqual(["b", "c"]);
    expect(q.nextAt()).toBe(100);
    expect(q.due(100)).toEqual(["held"]);
  });

  it("a reordered item does not wait behind a delayed in-order one", () => {
    const q = new LinkQueue<string>();
    q.push("delayed", 200, true);
    q.push("reordered", 50, false);
    expect(q.nextAt()).toBe(50);
    expect(q.due(60)).toEqual(["reordered"]);
    expect(q.due(200)).toEqual(["delayed"]);
  });
});
