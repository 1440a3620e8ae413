import { describe, expect, it } from "vitest";
import type { LogRecord } from "../core/protocol";
import { LogTail } from "../durable-objects/master/commit";

const record = (lsn: number): LogRecord => ({ lsn, term: 1, ts: 0, end: 0, entries: [] });

describe("the in-memory log tail", () => {
  it("keeps records within both its count and its byte bound, dropping the oldest", () => {
    const tail = new LogTail(
      () => 100,
      () => 1000,
    );
    for (let lsn = 1; lsn <= 10; lsn++) tail.add(record(lsn), 300);
    expect(tail.heldBytes).toBeLessThanOrEqual(1000);
    expect(tail.read(1, 100, 10_000)).toEqual([]);
    expect(tail.read(8, 100, 10_000).map((r) => r.lsn)).toEqual([8, 9, 10]);
  });

  it("reads no more than maxBytes, but always one record", () => {
    const tail = new LogTail(
      () => 100,
      () => 1_000_000,
    );
    for (let lsn = 1; lsn <= 5; lsn++) tail.add(record(lsn), 400);
    expect(tail.read(1, 100, 1000).map((r) => r.lsn)).toEqual([1, 2]);
    expect(tail.read(1, 100, 10).map((r) => r.lsn)).toEqual([1]);
    expect(tail.read(1, 3, 1_000_000).map((r) => r.lsn)).toEqual([1, 2, 3]);
  });

  it("holds nothing with a byte bound of 0, and forgets truncated records", () => {
    const none = new LogTail(
      () => 100,
      () => 0,
    );
    none.add(record(1), 10);
    expect(none.read(1, 10, 100)).toEqual([]);
    const tail = new LogTail(
      () => 100,
      () => 1000,
    );
    for (let lsn = 1; lsn <= 4; lsn++) tail.add(record(lsn), 10);
    tail.dropThrough(2);
    expect(tail.read(1, 10, 100)).toEqual([]);
    expect(tail.read(3, 10, 100).map((r) => r.lsn)).toEqual([3, 4]);
    expect(tail.heldBytes).toBe(20);
  });
});
