/**
 * Rows of an import that wait for their parent rows (docs/operations.md,
 * "Backups and restore"). Durable Object SQLite enforces foreign keys on
 * every statement and `PRAGMA foreign_keys = OFF` does nothing there, while
 * a dump (`sqlite3 .dump`'s, or ours for a table that names itself or tables
 * in a cycle) may hold a child row before its parent. The master runs each
 * row INSERT of a batch on its own savepoint and hands back the ones SQLite
 * refused for a missing parent; they go again with the next batch, after its
 * rows, until their parents are in. Only rows, tables, indexes and views may
 * pass them: before any other statement (DML, a trigger, sqlite_sequence),
 * whose effect may depend on which rows are in, the rows held must go in,
 * all together with foreign keys checked at the commit (rows that name each
 * other), or the import fails naming one.
 *
 * Held rows cost a retry with every batch (about 0.4 ms a row here), so they
 * are bounded: at most HELD_MAX_ROWS rows or HELD_MAX_BYTES of values wait at
 * any time, one batch's worth. A table whose every row names a later one (a
 * list in reverse) loads up to that size; past it the import fails, saying so.
 */
import type { DumpStatement } from "./dump-statement";
import { ApiError } from "./errors";
import type { BatchRow } from "./import-batcher";
import { tokenize } from "./sql-lexer";
import { upper } from "./sql-statement";

export const HELD_MAX_ROWS = 5_000;
export const HELD_MAX_BYTES = 2_000_000;

/** One row INSERT waiting for its parent row. */
export type HeldRow = BatchRow;

/**
 * Whether rows held back may be inserted after this statement of the dump
 * with the same result: more rows, or a table, index or view being created
 * (an index's entries follow from the rows, whenever they arrive). Anything
 * else (DML, triggers, sqlite_sequence) runs only once every row before it is in.
 */
export function mayPassHeldRows(statement: DumpStatement): boolean {
  if (statement.kind === "skip" || statement.kind === "insert") return true;
  return statement.kind === "sql" && createsObject(statement.sql);
}

/** CREATE [UNIQUE|VIRTUAL] TABLE, INDEX or VIEW: a statement that writes no rows. */
export function createsObject(sql: string): boolean {
  const words = tokenize(sql)
    .slice(0, 3)
    .map((t) => upper(t) ?? "");
  if (words[0] !== "CREATE") return false;
  const kind = words[1] === "UNIQUE" || words[1] === "VIRTUAL" ? words[2] : words[1];
  return kind === "TABLE" || kind === "INDEX" || kind === "VIEW";
}

export class HeldRows {
  private rows: HeldRow[] = [];
  private bytes = 0;

  get size(): number {
    return this.rows.length;
  }

  /** Takes every row held, to send with the next batch. */
  take(): HeldRow[] {
    const out = this.rows;
    this.rows = [];
    this.bytes = 0;
    return out;
  }

  /** Holds rows back; refuses once more wait than the bounds allow. */
  hold(rows: readonly HeldRow[]): void {
    for (const row of rows) {
      this.rows.push(row);
      this.bytes += row.bytes;
    }
    if (this.rows.length <= HELD_MAX_ROWS && this.bytes <= HELD_MAX_BYTES) return;
    const first = this.rows[0];
    throw new ApiError(
      "INVALID_SQL",
      `${this.rows.length} rows (${this.bytes} bytes) name parent rows that the dump has not ` +
        `inserted yet, more than an import holds back (${HELD_MAX_ROWS} rows, ${HELD_MAX_BYTES} ` +
        `bytes): the first is at line ${first?.span.line ?? 0}; order the dump's rows so that ` +
        "most parent rows come before the rows that name them",
      { held: this.rows.length, heldBytes: this.bytes, line: first?.span.line ?? 0 },
    );
  }
}
