/**
 * Runs the items of one import batch inside its transaction, holding back
 * rows that wait for a parent row (core/held-rows.ts). Each row INSERT runs
 * on a savepoint of its own; if SQLite refuses it for a foreign key, the
 * savepoint rolls it back (its captured changes with it) and a multi-row one
 * goes again row by row, so that only the rows that wait are held. Once the
 * batch's other items ran (or before one that is not a CREATE of a table,
 * index or view), the waiting rows go again, until a pass lets none in. If
 * the batch resolves (or such an item follows), the rest go in together
 * with `defer_foreign_keys` (rows naming each other, which no order lets in
 * one by one), on a savepoint that rolls back unless `PRAGMA
 * foreign_key_check` finds nothing: a deferred violation must never reach
 * the commit, where the platform resets the object instead of failing it.
 */
import type { ImportItem } from "../../core/backup-protocol";
import { freshCounters } from "../../core/connection-counters";
import { ApiError } from "../../core/errors";
import { createsObject, whyRowsMustKeepOrder } from "../../core/held-rows";
import { rowInserts } from "../../core/import-batcher";
import type { LogEntry } from "../../core/protocol";
import type { RecordBudget } from "../../core/record-budget";
import { asciiLower } from "../../core/sql-lexer";
import { ResultBudget } from "../sqlite/read";
import type { SqlNode } from "../sqlite/schema";
import { asSqlError } from "../sqlite/sql-errors";
import { runWrite } from "../sqlite/write";
import {
  mustKeepOrder,
  orderWitnesses,
  refuseForeignKeyActions,
  waitsForParent,
} from "./import-checks";

/** Passes over the rows waiting at the end of a batch; the rest wait for the next, or go in together. */
const MAX_PASSES = 4;

/** A row waiting: the batch's item and its row there (none: the item whole), as an INSERT of its own. */
export interface HeldAt {
  item: number;
  row?: number;
  statement: ImportItem;
}

export interface ItemsRun {
  entries: LogEntry[];
  wroteSequence: boolean;
  /** Rows still waiting for their parent rows, in the order they ran. */
  held: HeldAt[];
}

export interface ItemsInput {
  items: readonly ImportItem[];
  /** Row INSERTs that may wait, with how many rows each inserts. */
  holdable: ReadonlyMap<number, number>;
  resolve: boolean;
  statementMinRows: number;
  record: RecordBudget;
}

/** The privileged write of sqlite_sequence (import-commit.ts); whether it wrote. */
export type SequenceWriter = (item: Exclude<ImportItem, { kind: "sql" }>) => boolean;

export function runItems(
  storage: DurableObjectStorage,
  node: SqlNode,
  input: ItemsInput,
  writeSequence: SequenceWriter,
): ItemsRun {
  const budget = new ResultBudget();
  const limits = { statementMinRows: input.statementMinRows, record: input.record };
  const counters = freshCounters();
  const out: ItemsRun = { entries: [], wroteSequence: false, held: [] };
  /** Runs one statement for item `at`; the entry it logged, if any. */
  const run = (item: ImportItem, at: { item: number; row?: number }): LogEntry | null => {
    try {
      if (item.kind === "sql") {
        const outcome = runWrite(node, item, budget, "objects", limits, counters);
        if (outcome.entry !== null) out.entries.push(outcome.entry);
        out.wroteSequence ||= outcome.wroteSequence;
        return outcome.entry;
      }
      // Not `||=`: the write must happen whatever came before it.
      if (writeSequence(item)) out.wroteSequence = true;
      return null;
    } catch (error) {
      throw atItem(error, at);
    }
  };
  /**
   * Runs a row INSERT on its own savepoint; false if it waits for a parent row.
   * Only a row whose order cannot show may wait: otherwise SQLite's error stands.
   */
  const attempt = (held: HeldAt, retry = false): boolean => {
    try {
      storage.transactionSync(() => run(held.statement, held));
      return true;
    } catch (error) {
      // A row INSERT changes no schema: the cache stays.
      if (!waitsForParent(node, error)) throw retry ? wentInLate(error) : error;
      const why = whyRowsMustKeepOrder(orderWitnesses(node, held.statement));
      if (why === null) return false;
      throw mustKeepOrder(error, why);
    }
  };
  /**
   * The rows waiting go again, a pass forward then one backward (a chain of
   * rows each naming the next goes in at once either way), while a pass lets
   * one in, at most MAX_PASSES; then, to resolve, the rest all together.
   */
  const settle = (resolve: boolean): void => {
    for (let pass = 0, before = -1; pass < MAX_PASSES; pass++) {
      if (out.held.length === 0 || out.held.length === before) break;
      before = out.held.length;
      const order = pass % 2 === 0 ? out.held : [...out.held].reverse();
      const waiting = new Set(order.filter((held) => !attempt(held, true)));
      out.held = out.held.filter((held) => waiting.has(held));
    }
    if (out.held.length === 0 || !resolve) return;
    resolveTogether(storage, node, out.held, run);
    out.held = [];
  };
  input.items.forEach((item, index) => {
    const rows = input.holdable.get(index);
    if (rows !== undefined) {
      const whole: HeldAt = { item: index, statement: item };
      if (attempt(whole)) return;
      const one = rows > 1 ? rowsOf(item, rows, index) : [whole];
      for (const held of one) if (!attempt(held)) out.held.push(held);
      return;
    }
    // A statement whose effect may depend on which rows are in runs after them.
    if (out.held.length > 0 && !(item.kind === "sql" && createsObject(item.sql))) settle(true);
    if (item.kind === "sql") refuseForeignKeyActions(node, item, index);
    run(item, { item: index });
  });
  settle(input.resolve);
  return out;
}

/** A multi-row INSERT as one INSERT per row; whole if its text is not of that shape. */
function rowsOf(item: ImportItem, rows: number, index: number): HeldAt[] {
  const one = rowInserts(item, rows);
  if (one === null) return [{ item: index, statement: item }];
  return one.map((statement, row) => ({ item: index, row, statement }));
}

/**
 * The rows still waiting, all together with foreign keys checked at the end;
 * throws (nothing of them kept) naming a row whose parent is nowhere.
 */
function resolveTogether(
  storage: DurableObjectStorage,
  node: SqlNode,
  held: readonly HeldAt[],
  run: (item: ImportItem, at: HeldAt) => LogEntry | null,
): void {
  const heldByRow = new Map<string, HeldAt>();
  const tableOf = new Map<HeldAt, string>();
  try {
    storage.transactionSync(() => {
      node.sql.exec("PRAGMA defer_foreign_keys = ON").toArray();
      for (const one of held) {
        let entry: LogEntry | null;
        try {
          entry = run(one.statement, one);
        } catch (error) {
          throw wentInLate(error);
        }
        if (entry?.kind !== "rows") continue;
        for (const change of entry.changes) heldByRow.set(`${change.t}\u0000${change.nk}`, one);
        const table = entry.changes[0]?.t;
        if (table !== undefined) tableOf.set(one, asciiLower(table));
      }
      const violations = node.sql
        .exec<{ child: string; rowid: string | null; parent: string }>(
          'SELECT "table" AS child, CAST(rowid AS TEXT) AS rowid, parent FROM pragma_foreign_key_check',
        )
        .toArray();
      const first = violations[0];
      if (first === undefined) return;
      const at =
        (first.rowid === null
          ? held.find((one) => tableOf.get(one) === asciiLower(first.child))
          : heldByRow.get(`${first.child}\u0000i${first.rowid}`)) ?? held[0];
      // SQLite names no row of a WITHOUT ROWID table: the first of its rows waiting is named.
      const which =
        first.rowid === null
          ? " (WITHOUT ROWID: SQLite does not say which row; the first of that table's rows still waiting is named)"
          : ` with rowid ${first.rowid}`;
      throw new ApiError(
        "INVALID_SQL",
        `FOREIGN KEY constraint failed: ${violations.length} row(s) name a parent row the dump ` +
          `does not hold (a row of ${first.child}${which} names one in ${first.parent})`,
        {
          constraint: "foreign key",
          item: at?.item ?? 0,
          ...(at?.row === undefined ? {} : { row: at.row }),
          violations: violations.length,
        },
      );
    });
  } catch (error) {
    node.schema.invalidate();
    throw error;
  } finally {
    // A connection setting, not rolled back with the savepoint.
    node.sql.exec("PRAGMA defer_foreign_keys = OFF").toArray();
  }
}

/**
 * SQLite's refusal of a row that waited for its parent row (a UNIQUE key, a
 * CHECK), saying that it went in after rows the dump has after it: one of
 * those may be the row sqlite3 would have refused instead.
 */
function wentInLate(error: unknown): unknown {
  if (!(error instanceof ApiError)) return error;
  return new ApiError(
    error.code,
    `${error.message} (this row waited for its parent row and went in after rows that come ` +
      "later in the dump: the row it conflicts with may be one of those)",
    error.details,
    error,
  );
}

/** The error of the batch's item (and row) `at`, saying which it was. */
function atItem(error: unknown, at: { item: number; row?: number }): unknown {
  const mapped = asSqlError(error);
  if (!(mapped instanceof ApiError)) return error;
  if (mapped.details?.item !== undefined) return mapped;
  const where = at.row === undefined ? { item: at.item } : { item: at.item, row: at.row };
  return new ApiError(mapped.code, mapped.message, { ...mapped.details, ...where }, error);
}
