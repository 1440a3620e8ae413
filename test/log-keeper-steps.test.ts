/**
 * A replica follows the master's truncation point in short steps, one per
 * message (each step runs inside the call whose ack waits behind it), and
 * still keeps pace with batches of any size.
 */
import { describe, expect, it } from "vitest";
import type { NodeStore } from "../durable-objects/node-store";
import {
  LogKeeper,
  TRUNCATE_STEP_ROWS,
  truncationStep,
} from "../durable-objects/replica/log-keeper";

function keeper(): { keeper: LogKeeper; steps: [number, number][] } {
  const steps: [number, number][] = [];
  const store = {
    truncatedThrough: () => 0,
    readLog: () => [],
    saveResults: () => {},
    truncateLog: (from: number, through: number) => steps.push([from, through]),
    pruneResults: () => {},
  } as unknown as NodeStore;
  const storage = { transactionSync: (fn: () => unknown) => fn() } as DurableObjectStorage;
  return { keeper: new LogKeeper(storage, store), steps };
}

describe("a replica's truncation steps", () => {
  it("are short: one step per message, never past the target", () => {
    expect(truncationStep(0, 10_000, 1)).toBe(TRUNCATE_STEP_ROWS);
    expect(truncationStep(100, 150, 1)).toBe(150);
    expect(truncationStep(0, 10_000, 0)).toBe(TRUNCATE_STEP_ROWS);
  });

  it("take twice what the message brought, so the log keeps pace with large batches", () => {
    expect(truncationStep(0, 10_000, 512)).toBe(1_024);
    const { keeper: k, steps } = keeper();
    // A replica far behind the master's truncation point, receiving 512-record
    // batches: its log may not grow without bound.
    let applied = 50_000;
    for (let message = 0; message < 200; message++) {
      applied += 512;
      k.upkeep(applied - 20_000, applied, 60_000, applied, 512);
    }
    const through = steps.at(-1)?.[1] ?? 0;
    // Target moved 512 a message; the steps of 1,024 caught up with it.
    expect(through).toBe(applied - 20_000);
    for (const [from, to] of steps) expect(to - from).toBeLessThanOrEqual(1_024);
  });

  it("stop at the replica's own newest record", () => {
    const { keeper: k, steps } = keeper();
    k.upkeep(1_000, 40, 60_000, 40, 1);
    expect(steps).toEqual([[0, 39]]);
  });
});
