import { describe, expect, it } from "vitest";
import {
  type AckTiming,
  findSlowReplica,
  SLOW_MARGIN_MS,
  SLOW_MIN_SAMPLES,
} from "../core/slow-replica";

function timing(id: string, avgAckMs: number, samples = SLOW_MIN_SAMPLES): AckTiming {
  return { id, avgAckMs, samples };
}

/** Large enough that the 40% cap never interferes. */
const MANY = 100;

describe("findSlowReplica", () => {
  it("uses a 2 ms margin and needs 20 samples, as documented", () => {
    expect(SLOW_MARGIN_MS).toBe(2);
    expect(SLOW_MIN_SAMPLES).toBe(20);
  });

  it("marks the worst replica when it exceeds factor x the second-worst plus the margin", () => {
    const coherent = [timing("A", 5), timing("B", 10), timing("C", 50)];
    expect(findSlowReplica(coherent, 2, 0, MANY)).toBe("C");
  });

  it("finds the worst replica whatever its position in the list", () => {
    const coherent = [timing("C", 50), timing("A", 5), timing("B", 10)];
    expect(findSlowReplica(coherent, 2, 0, MANY)).toBe("C");
  });

  it("turns the rule off with a factor of 0", () => {
    const coherent = [timing("A", 1), timing("B", 1), timing("C", 10_000)];
    expect(findSlowReplica(coherent, 0, 0, MANY)).toBeNull();
  });

  it("marks nothing with fewer than two replicas to compare", () => {
    expect(findSlowReplica([], 2, 0, MANY)).toBeNull();
    expect(findSlowReplica([timing("A", 10_000)], 2, 0, MANY)).toBeNull();
  });

  it("does not judge a replica with fewer than the minimum samples", () => {
    const coherent = [timing("A", 5), timing("B", 10), timing("C", 50, SLOW_MIN_SAMPLES - 1)];
    expect(findSlowReplica(coherent, 2, 0, MANY)).toBeNull();
  });

  it("judges a replica with exactly the minimum samples", () => {
    const coherent = [timing("A", 5), timing("B", 10), timing("C", 50, SLOW_MIN_SAMPLES)];
    expect(findSlowReplica(coherent, 2, 0, MANY)).toBe("C");
  });

  it("marks nothing when only one replica has enough samples", () => {
    const coherent = [timing("A", 5, SLOW_MIN_SAMPLES - 1), timing("C", 50)];
    expect(findSlowReplica(coherent, 2, 0, MANY)).toBeNull();
  });

  it("does not use an unjudged replica as the second-worst", () => {
    // Judged against B (40 ms) C would not be slow; B has too few samples, so
    // C is compared with A (10 ms): 50 > 2 x 10 + 2.
    const coherent = [timing("A", 10), timing("B", 40, SLOW_MIN_SAMPLES - 1), timing("C", 50)];
    expect(findSlowReplica(coherent, 2, 0, MANY)).toBe("C");
  });

  it("compares the worst with the second-worst, not with the fastest", () => {
    // 30 > 2 x 1 + 2, but 30 is not > 2 x 14 + 2.
    const coherent = [timing("A", 1), timing("B", 14), timing("C", 30)];
    expect(findSlowReplica(coherent, 2, 0, MANY)).toBeNull();
  });

  it("does not mark the worst replica exactly at the boundary", () => {
    const coherent = [timing("A", 10), timing("B", 2 * 10 + SLOW_MARGIN_MS)];
    expect(findSlowReplica(coherent, 2, 0, MANY)).toBeNull();
  });

  it("marks the worst replica just past the boundary", () => {
    const coherent = [timing("A", 10), timing("B", 2 * 10 + SLOW_MARGIN_MS + 0.001)];
    expect(findSlowReplica(coherent, 2, 0, MANY)).toBe("B");
  });

  it("scales the threshold with the factor", () => {
    // Factor 3 over 10 ms: the threshold is 32 ms.
    expect(findSlowReplica([timing("A", 10), timing("B", 31)], 3, 0, MANY)).toBeNull();
    expect(findSlowReplica([timing("A", 10), timing("B", 33)], 3, 0, MANY)).toBe("B");
  });

  it("marks nothing when the margin alone separates two fast replicas", () => {
    // 2 > 2 x 0 is true without the margin; with it the worst must exceed 2 ms.
    expect(findSlowReplica([timing("A", 0), timing("B", 2)], 2, 0, MANY)).toBeNull();
    expect(findSlowReplica([timing("A", 0), timing("B", 2.5)], 2, 0, MANY)).toBe("B");
  });

  it("lets the first replica of four be marked slow", () => {
    const coherent = [timing("A", 5), timing("B", 10), timing("C", 50)];
    expect(findSlowReplica(coherent, 2, 0, 4)).toBe("C");
  });

  it("marks no second replica of four because floor(4 x 0.4) is 1", () => {
    const coherent = [timing("A", 5), timing("B", 10), timing("C", 50)];
    expect(findSlowReplica(coherent, 2, 1, 4)).toBeNull();
  });

  it("lets a second replica of five be marked slow because floor(5 x 0.4) is 2", () => {
    const coherent = [timing("A", 5), timing("B", 10), timing("C", 50)];
    expect(findSlowReplica(coherent, 2, 1, 5)).toBe("C");
  });

  it("marks no third replica of five", () => {
    const coherent = [timing("A", 5), timing("B", 10), timing("C", 50)];
    expect(findSlowReplica(coherent, 2, 2, 5)).toBeNull();
  });

  it("never marks a replica of two because 40% of two rounds down to none", () => {
    const coherent = [timing("A", 5), timing("B", 500)];
    expect(findSlowReplica(coherent, 2, 0, 2)).toBeNull();
  });
});
