import { describe, expect, it } from "vitest";
import { durablePoint, hasQuorumContact, majority } from "../core/quorum";

describe("majorities (core/quorum.ts)", () => {
  it("a majority of n nodes", () => {
    expect([1, 2, 3, 4, 5, 6].map(majority)).toEqual([1, 2, 2, 3, 3, 4]);
  });

  it("the durable point is what a majority, the master counted, has", () => {
    // 5 nodes: the master at 10, replicas at 9, 9, 3, 0: three of five have 9.
    expect(durablePoint(10, [9, 9, 3, 0])).toBe(9);
    expect(durablePoint(10, [9, 3, 3, 0])).toBe(3);
    expect(durablePoint(10, [])).toBe(10);
    // Two nodes: both must have it.
    expect(durablePoint(10, [4])).toBe(4);
  });

  it("quorum contact counts the master and the replicas that answered since", () => {
    expect(hasQuorumContact([100, 100, 0, 0], 50)).toBe(true); // 3 of 5
    expect(hasQuorumContact([100, 0, 0, 0], 50)).toBe(false); // 2 of 5
    expect(hasQuorumContact([], 50)).toBe(true); // the master alone is all there is
    expect(hasQuorumContact([49], 50)).toBe(false); // 1 of 2
  });
});
