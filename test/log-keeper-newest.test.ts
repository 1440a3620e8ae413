/**
 * The replica's memo of its newest record's term (LogKeeper.termAt), which
 * spares the log-matching check a storage read per batch: it may only ever
 * say what the committed log says.
 */
import { describe, expect, it } from "vitest";
import type { LogRecord } from "../core/protocol";
import type { NodeStore } from "../durable-objects/node-store";
import { LogKeeper } from "../durable-objects/replica/log-keeper";

function keeperOverStore(): { keeper: LogKeeper; stored: Map<number, number> } {
  const stored = new Map<number, number>();
  const store = {
    truncatedThrough: () => 0,
    termAt: (lsn: number) => stored.get(lsn) ?? 0,
    appendLog: (record: { lsn: number; term: number }) => stored.set(record.lsn, record.term),
    saveResults: () => {},
  } as unknown as NodeStore;
  return { keeper: new LogKeeper({} as DurableObjectStorage, store), stored };
}

const record = (lsn: number, term: number): LogRecord => ({
  lsn,
  term,
  ts: 1,
  end: lsn * 10,
  entries: [],
});

/** A batch kept in its transaction and committed, as apply-batch.ts runs one. */
function commitBatch(keeper: LogKeeper, records: LogRecord[]): void {
  keeper.keep(records);
  keeper.committed(records);
}

describe("LogKeeper.termAt", () => {
  it("answers the newest committed record from memory, any other from storage", () => {
    const { keeper, stored } = keeperOverStore();
    commitBatch(keeper, [record(1, 2), record(2, 2)]);
    // Storage changing under it would show for any LSN but the newest.
    stored.set(1, 9);
    stored.set(2, 9);
    expect(keeper.termAt(2)).toBe(2);
    expect(keeper.termAt(1)).toBe(9);
    expect(keeper.termAt(3)).toBe(0);
  });

  it("keeps nothing of a batch whose transaction did not commit", () => {
    const { keeper, stored } = keeperOverStore();
    commitBatch(keeper, [record(1, 2)]);
    keeper.keep([record(2, 3)]);
    // Rolled back: storage holds no record 2, and the next batch applies nothing.
    stored.delete(2);
    commitBatch(keeper, []);
    expect(keeper.termAt(2)).toBe(0);
    expect(keeper.termAt(1)).toBe(2);
  });

  it("forgets the newest record when a snapshot restarts the log", () => {
    const { keeper, stored } = keeperOverStore();
    commitBatch(keeper, [record(5, 1)]);
    stored.clear();
    keeper.restarted(5);
    expect(keeper.termAt(5)).toBe(0);
  });
});
