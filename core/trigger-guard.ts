/**
 * User triggers run on the master only. A replica applies the master's
 * captured rows, which already hold every trigger's effects; a trigger firing
 * again there would write them twice, with values of its own (datetime('now'),
 * random()). SQLite has no switch to turn triggers off, so every user trigger
 * is created with a WHEN condition that is false while a replica applies:
 * `NOT EXISTS (SELECT 1 FROM _repl_applying)`, a table that holds a row only
 * inside a replica's apply transaction. The condition is visible in
 * sqlite_schema.sql; exports take it out again (unguardTrigger).
 */
import { ApiError } from "./errors";
import type { Token } from "./sql-lexer";
import { type SingleStatement, isCreateTrigger, isPunct, upper } from "./sql-statement";

export const APPLYING_TABLE = "_repl_applying";
export const TRIGGER_GUARD = `NOT EXISTS (SELECT 1 FROM ${APPLYING_TABLE})`;

/** Index of the first word `word` at parenthesis depth 0 from `from`, not after a `.`. */
function topLevel(tokens: readonly Token[], word: string, from: number, to: number): number {
  let depth = 0;
  for (let i = from; i < to; i++) {
    const token = tokens[i];
    if (isPunct(token, "(")) depth++;
    else if (isPunct(token, ")")) depth--;
    else if (depth === 0 && upper(token) === word && !isPunct(tokens[i - 1], ".")) return i;
  }
  return -1;
}

/** The CREATE TRIGGER statement with the guard added to (or as) its WHEN clause. */
export function guardTrigger(statement: SingleStatement): string {
  const { tokens, sql } = statement;
  if (!isCreateTrigger(tokens)) return sql.slice(0, statement.end);
  const on = topLevel(tokens, "ON", 0, tokens.length);
  const begin = on < 0 ? -1 : topLevel(tokens, "BEGIN", on + 2, tokens.length);
  const beginToken = tokens[begin];
  if (beginToken === undefined) {
    throw new ApiError("INVALID_SQL", "CREATE TRIGGER without ON ... BEGIN");
  }
  const when = topLevel(tokens, "WHEN", on + 2, begin);
  const head = sql.slice(0, (tokens[when] ?? beginToken).start);
  const rest = sql.slice(beginToken.start, statement.end);
  if (when < 0) return `${head}WHEN ${TRIGGER_GUARD} ${rest}`;
  const first = tokens[when + 1];
  const last = tokens[begin - 1];
  if (first === undefined || last === undefined || when + 1 >= begin) {
    throw new ApiError("INVALID_SQL", "CREATE TRIGGER with an empty WHEN clause");
  }
  // The condition goes inside parentheses of its own, so it must close every
  // one it opens, and no more: `0) OR (1` would turn the guard into one operand.
  let depth = 0;
  for (let i = when + 1; i < begin; i++) {
    if (isPunct(tokens[i], "(")) depth++;
    else if (isPunct(tokens[i], ")") && --depth < 0) break;
  }
  if (depth !== 0) {
    throw new ApiError(
      "INVALID_SQL",
      "CREATE TRIGGER whose WHEN clause does not balance its parentheses",
      { construct: "unbalanced WHEN" },
    );
  }
  const condition = sql.slice(first.start, last.end);
  return `${head}WHEN (${TRIGGER_GUARD}) AND (${condition}) ${rest}`;
}

/** A trigger's SQL as the user wrote it (for exports), and whether it was guarded. */
export function unguardTrigger(sql: string): { sql: string; guarded: boolean } {
  const wrapped = `WHEN (${TRIGGER_GUARD}) AND (`;
  const at = sql.indexOf(wrapped);
  if (at >= 0) {
    const close = sql.lastIndexOf(") BEGIN");
    if (close > at) {
      return {
        sql: `${sql.slice(0, at)}WHEN ${sql.slice(at + wrapped.length, close)}${sql.slice(close + 1)}`,
        guarded: true,
      };
    }
  }
  const bare = `WHEN ${TRIGGER_GUARD} `;
  const plain = sql.indexOf(bare);
  if (plain >= 0)
    return { sql: sql.slice(0, plain) + sql.slice(plain + bare.length), guarded: true };
  return { sql, guarded: false };
}

export function isGuardedTrigger(sql: string | null): boolean {
  return sql?.includes(TRIGGER_GUARD) ?? false;
}
