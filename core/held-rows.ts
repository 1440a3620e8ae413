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
import { type BatchRow, type Grouping, type ImportBatch, splitRows } from "./import-batcher";
import { type Token, tokenize } from "./sql-lexer";
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

/**
 * CREATE [UNIQUE|VIRTUAL] TABLE, INDEX or VIEW: a statement that writes no
 * rows. Not CREATE TABLE ... AS SELECT, which copies the rows in now.
 */
export function createsObject(sql: string): boolean {
  const tokens = tokenize(sql);
  const words = tokens.slice(0, 3).map((t) => upper(t) ?? "");
  if (words[0] !== "CREATE") return false;
  const kind = words[1] === "UNIQUE" || words[1] === "VIRTUAL" ? words[2] : words[1];
  if (kind === "INDEX" || kind === "VIEW") return true;
  return kind === "TABLE" && !hasTopLevelAs(tokens);
}

function hasTopLevelAs(tokens: readonly Token[]): boolean {
  let depth = 0;
  for (const token of tokens) {
    if (token.type === "punct" && token.text === "(") depth++;
    else if (token.type === "punct" && token.text === ")") depth--;
    else if (depth === 0 && upper(token) === "AS") return true;
  }
  return false;
}

/** What a user schema holds that makes the order rows arrive in visible. */
export interface OrderWitnesses {
  /** A user trigger exists: it may read or write any table as each row arrives. */
  triggers: boolean;
  /** The CREATE TABLE statement of the table a row goes to. */
  tableSql: string | null;
}

/**
 * Why a row may not wait for its parent row, if it may not: a trigger sees
 * rows in the order they arrive, and a table whose key or UNIQUE column is
 * declared ON CONFLICT REPLACE or IGNORE keeps the last or the first of two
 * rows with one key. Either way a row inserted later than the dump has it
 * could leave another state than the dump's order does.
 */
export function whyRowsMustKeepOrder(schema: OrderWitnesses): string | null {
  if (schema.triggers) return "a trigger exists, and sees rows in the order they arrive";
  const words = tokenize(schema.tableSql ?? "").map((t) => upper(t) ?? "");
  const clause = words.findIndex(
    (w, i) => w === "CONFLICT" && (words[i + 1] === "REPLACE" || words[i + 1] === "IGNORE"),
  );
  if (clause < 0) return null;
  return `its table declares ON CONFLICT ${words[clause + 1]}, so which of two rows with one key stays depends on their order`;
}

/** The table an `INSERT INTO <name>` statement names (its last name part), unquoted. */
export function insertTarget(sql: string): string | null {
  const tokens = tokenize(sql);
  const into = tokens.findIndex((t) => upper(t) === "INTO");
  if (into < 0) return null;
  let at = into + 1;
  if (tokens[at + 1]?.type === "punct" && tokens[at + 1]?.text === ".") at += 2;
  const name = tokens[at];
  return name?.type === "word" || name?.type === "quoted-ident" ? name.value : null;
}

export class HeldRows {
  private rows: HeldRow[] = [];
  private bytes = 0;

  get size(): number {
    return this.rows.length;
  }

  /** The first statement of the dump among the rows held; null when none is. */
  firstStatement(): number | null {
    let first: number | null = null;
    for (const row of this.rows) first = Math.min(first ?? row.span.first, row.span.first);
    return first;
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

/** Row `row` of the batch's item `item`, as an INSERT of its own. */
export function rowOf(batch: ImportBatch, item: number, row: number): HeldRow {
  const grouping = batch.groupings[item];
  const statement = batch.items[item];
  if (grouping == null || statement === undefined) {
    throw new Error(`the master held back item ${item}, which is not a row INSERT`);
  }
  const bytes = (batch.bytes / Math.max(batch.rows, 1)) * grouping.rows.length;
  const rows = splitRows(statement, grouping, bytes);
  const one = rows[row];
  if (one === undefined)
    throw new Error(`the master held back row ${row} of a ${rows.length}-row INSERT`);
  return one;
}

/**
 * The batch with the rows held back among its items: after its rows, tables
 * and indexes (where their parents may be), before its first other statement
 * (DML, a trigger, sqlite_sequence), before which the master lets them in.
 */
export function withHeldRows(batch: ImportBatch, held: readonly HeldRow[]): ImportBatch {
  if (held.length === 0) return batch;
  const barrier = batch.items.findIndex(
    (item, i) => batch.groupings[i] == null && !(item.kind === "sql" && createsObject(item.sql)),
  );
  const at = barrier < 0 ? batch.items.length : barrier;
  const splice = <T>(mine: readonly T[], theirs: readonly T[]) => [
    ...mine.slice(0, at),
    ...theirs,
    ...mine.slice(at),
  ];
  return {
    items: splice(
      batch.items,
      held.map((h) => h.item),
    ),
    spans: splice(
      batch.spans,
      held.map((h) => h.span),
    ),
    groupings: splice<Grouping | null>(
      batch.groupings,
      held.map((h) => h.grouping),
    ),
    rows: batch.rows + held.length,
    bytes: batch.bytes + held.reduce((n, h) => n + h.bytes, 0),
    ...(batch.resolve === undefined ? {} : { resolve: batch.resolve }),
  };
}
