import { describe, expect, it } from "vitest";
import { type PolicyInput, planWait, SYNC_MODES, type SyncMode } from "../core/commit-policy";

/** A plain commit with async_dist_commit on and room in the waiter: the hand-off case. */
function input(overrides: Partial<PolicyInput> = {}): PolicyInput {
  return {
    syncMode: "full",
    asyncDistCommit: true,
    maxOutstanding: 10,
    handedOffNow: 0,
    plain: true,
    heldBytes: 0,
    bytes: 100,
    maxHeldBytes: 10_000,
    ...overrides,
  };
}

const WAITING_MODES: readonly SyncMode[] = ["full", "quorum"];

describe("planWait", () => {
  it("lists every sync mode", () => {
    expect([...SYNC_MODES].sort()).toEqual(["full", "none", "quorum"]);
  });

  it("hands off a plain commit when async_dist_commit is on and the waiter has room", () => {
    for (const syncMode of WAITING_MODES) {
      expect(planWait(input({ syncMode }))).toEqual({ kind: "handoff" });
    }
  });

  it("does not wait under sync_mode none, whatever the rest of the input", () => {
    for (const asyncDistCommit of [true, false]) {
      for (const plain of [true, false]) {
        for (const handedOffNow of [0, 5, 10, 11]) {
          const plan = planWait(
            input({ syncMode: "none", asyncDistCommit, plain, handedOffNow, maxOutstanding: 10 }),
          );
          expect(plan).toEqual({ kind: "no-wait" });
        }
      }
    }
  });

  it("waits inline with reason off when async_dist_commit is off", () => {
    for (const syncMode of WAITING_MODES) {
      expect(planWait(input({ syncMode, asyncDistCommit: false }))).toEqual({
        kind: "inline",
        reason: "off",
      });
    }
  });

  it("waits inline with reason notPlain for a commit carrying DDL", () => {
    expect(planWait(input({ plain: false }))).toEqual({ kind: "inline", reason: "notPlain" });
  });

  it("waits inline with reason queueFull once the hand-offs reach max outstanding", () => {
    expect(planWait(input({ maxOutstanding: 4, handedOffNow: 4 }))).toEqual({
      kind: "inline",
      reason: "queueFull",
    });
    expect(planWait(input({ maxOutstanding: 4, handedOffNow: 7 }))).toEqual({
      kind: "inline",
      reason: "queueFull",
    });
  });

  it("still hands off with one slot left below max outstanding", () => {
    expect(planWait(input({ maxOutstanding: 4, handedOffNow: 3 }))).toEqual({
      kind: "handoff",
    });
  });

  it("never hands off when max outstanding is zero", () => {
    expect(planWait(input({ maxOutstanding: 0, handedOffNow: 0 }))).toEqual({
      kind: "inline",
      reason: "queueFull",
    });
  });

  it("waits inline with reason queueFull once the held responses would pass waiter_max_held_bytes", () => {
    expect(planWait(input({ heldBytes: 9_900, bytes: 100 }))).toEqual({ kind: "handoff" });
    expect(planWait(input({ heldBytes: 9_901, bytes: 100 }))).toEqual({
      kind: "inline",
      reason: "queueFull",
    });
    // One response larger than the whole cap waits inline even in an empty waiter.
    expect(planWait(input({ bytes: 10_001 }))).toEqual({ kind: "inline", reason: "queueFull" });
  });

  it("reports off rather than notPlain or queueFull when async_dist_commit is off", () => {
    const plan = planWait(
      input({ asyncDistCommit: false, plain: false, maxOutstanding: 1, handedOffNow: 1 }),
    );
    expect(plan).toEqual({ kind: "inline", reason: "off" });
  });

  it("reports notPlain rather than queueFull for DDL when the waiter is also full", () => {
    const plan = planWait(input({ plain: false, maxOutstanding: 1, handedOffNow: 1 }));
    expect(plan).toEqual({ kind: "inline", reason: "notPlain" });
  });

  it("hands off only when every condition allows it", () => {
    for (const syncMode of SYNC_MODES) {
      for (const asyncDistCommit of [true, false]) {
        for (const plain of [true, false]) {
          for (const handedOffNow of [0, 1, 2, 3]) {
            const plan = planWait(
              input({ syncMode, asyncDistCommit, plain, handedOffNow, maxOutstanding: 2 }),
            );
            const expected = syncMode !== "none" && asyncDistCommit && plain && handedOffNow < 2;
            expect(plan.kind === "handoff").toBe(expected);
          }
        }
      }
    }
  });
});
