/** pollUntil (core/poll-until.ts): true as soon as the check holds, false once the deadline passed. */
import { describe, expect, it } from "vitest";
import { pollUntil } from "../core/poll-until";

describe("pollUntil", () => {
  it("answers true at once when the check already holds", async () => {
    let calls = 0;
    expect(await pollUntil(() => ++calls > 0, Date.now() - 1)).toBe(true);
    expect(calls).toBe(1);
  });
  it("answers true once the check comes to hold before the deadline", async () => {
    const at = Date.now() + 30;
    expect(await pollUntil(() => Date.now() >= at, Date.now() + 1_000)).toBe(true);
    expect(Date.now()).toBeGreaterThanOrEqual(at);
  });
  it("answers false once the deadline passed, not before", async () => {
    const started = Date.now();
    expect(await pollUntil(() => false, started + 40)).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(40);
  });
});
