/**
 * The counters SQLite keeps per connection and SQL reads through
 * `last_insert_rowid()`, `changes()` and `total_changes()`. A node has one
 * connection, shared by every client request, every libSQL stream and its own
 * bookkeeping (the capture table, the log), so what those functions would
 * read there belongs to whoever ran last. Each request (and each libSQL
 * stream, across its requests) keeps its own counters instead, as a fresh
 * connection would, and every call in its SQL is bound to them before SQLite
 * sees the statement.
 *
 * Calls inside stored SQL (a view's query, a trigger's body) are not
 * rewritten: SQLite runs them on the node's connection.
 */
import { dmlShape } from "./dml-shape";
import type { Token } from "./sql-lexer";
import { INT64_MIN } from "./sql-value";

export interface ConnectionCounters {
  /** Decimal text of the rowid of the last row an INSERT of this connection wrote; "0" at first. */
  lastInsertRowid: string;
  /** Rows the last INSERT, UPDATE or DELETE changed, its triggers' rows not counted. */
  changes: number;
  /** Rows every INSERT, UPDATE and DELETE so far changed (triggers' rows not counted). */
  totalChanges: number;
}

export function freshCounters(): ConnectionCounters {
  return { lastInsertRowid: "0", changes: 0, totalChanges: 0 };
}

export type CounterFunction = "last_insert_rowid" | "changes" | "total_changes";

const FUNCTIONS = new Set<string>(["last_insert_rowid", "changes", "total_changes"]);

export interface CounterCall {
  fn: CounterFunction;
  /** Index of the call's last token, its `)`. */
  last: number;
}

const isPunct = (token: Token | undefined, text: string) =>
  token?.type === "punct" && token.text === text;

/**
 * The calls of the three functions among `tokens`, by the index of the
 * function's name: a name (bare or quoted) followed by `(` `)`. No other
 * construct of SQLite has an empty parenthesised list after a name, so this
 * meets no table or column; a name after `.` is a qualified name, never one
 * of these functions. In the RETURNING clause of an INSERT, last_insert_rowid()
 * is the statement's own (SQLite moves it row by row as it inserts), so it is
 * left to SQLite there.
 */
export function counterCalls(tokens: readonly Token[]): Map<number, CounterCall> {
  const calls = new Map<number, CounterCall>();
  const shape = dmlShape(tokens);
  const inserts = shape?.kind === "INSERT" || shape?.kind === "REPLACE";
  const ownFrom = inserts ? (shape?.returning?.keyword ?? tokens.length) : tokens.length;
  tokens.forEach((token, i) => {
    if (token.type !== "word" && token.type !== "quoted-ident") return;
    const name = token.value.toLowerCase();
    if (!FUNCTIONS.has(name)) return;
    if (name === "last_insert_rowid" && i > ownFrom) return;
    if (isPunct(tokens[i - 1], ".")) return;
    if (!isPunct(tokens[i + 1], "(") || !isPunct(tokens[i + 2], ")")) return;
    calls.set(i, { fn: name as CounterFunction, last: i + 2 });
  });
  return calls;
}

/** The SQL that stands for a call: a parenthesised integer literal, exact for all 64 bits. */
export function counterLiteral(counters: ConnectionCounters, fn: CounterFunction): string {
  if (fn === "changes") return `(${counters.changes})`;
  if (fn === "total_changes") return `(${counters.totalChanges})`;
  const value = BigInt(counters.lastInsertRowid);
  // -9223372036854775808 would parse as minus a REAL: 2^63 is past INTEGER.
  return value === INT64_MIN ? "(-9223372036854775807 - 1)" : `(${value})`;
}

/**
 * The counters after a statement that ran: `written` is its changes() when it
 * was an INSERT, UPDATE or DELETE (null for a read or DDL, which leave them),
 * `insertedRowid` the rowid when it inserted a row of a rowid table.
 */
export function afterStatement(
  counters: ConnectionCounters,
  written: number | null,
  insertedRowid: string | null,
): void {
  if (written !== null) {
    counters.changes = written;
    counters.totalChanges += written;
  }
  if (insertedRowid !== null) counters.lastInsertRowid = insertedRowid;
}
