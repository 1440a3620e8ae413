/**
 * Exact RETURNING rows. The runtime hands a write's RETURNING rows over as JS
 * values: an INTEGER as a double (rounded past 2^53), REAL 2.0 as the number
 * 2, -0.0 as 0. A query is read through a wrapper that renders each value as
 * a cell in SQL (durable-objects/sqlite/read.ts), but a write cannot be
 * wrapped, so its RETURNING clause is extended instead: the statement's own
 * items stay, so that SQLite names the columns as it always does, and one
 * more item per column renders it as a cell:
 *
 *   RETURNING id, v + 1
 *   RETURNING id, v + 1,
 *     (WITH _repl_cell(v) AS (SELECT id) SELECT <cell of v> FROM _repl_cell),
 *     (WITH _repl_cell(v) AS (SELECT v + 1) SELECT <cell of v> FROM _repl_cell)
 *
 * The CTE's column list names the item's value whatever its alias; a cell
 * reads it several times, which is safe because what a write may evaluate is
 * deterministic (the guard binds every non-deterministic call to a value). `*`
 * is expanded to the target's columns, each rendered directly.
 */
import { quoteIdent, type Token } from "./sql-lexer";
import type { BoundBody } from "./sql-params";
import { upper } from "./sql-statement";
import { cellSql } from "./sql-value";

export const CELL_CTE = "_repl_cell";

interface Item {
  /** Token indices, inclusive. */
  first: number;
  last: number;
  star: boolean;
}

export interface ReturningClause {
  /** Index of the RETURNING keyword. */
  keyword: number;
  items: Item[];
}

const isPunct = (token: Token | undefined, text: string) =>
  token?.type === "punct" && token.text === text;

/**
 * The statement's RETURNING clause. RETURNING is a reserved word (SQLite
 * never reads it as a name), no other clause of a DML statement holds it
 * outside parentheses, and the clause ends the statement.
 */
export function returningClause(tokens: readonly Token[]): ReturningClause | null {
  let depth = 0;
  let keyword = -1;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (isPunct(token, "(")) depth++;
    else if (isPunct(token, ")")) depth--;
    else if (depth === 0 && token?.type === "word" && upper(token) === "RETURNING") {
      keyword = i;
      break;
    }
  }
  if (keyword < 0) return null;
  const items: Item[] = [];
  let first = keyword + 1;
  depth = 0;
  for (let i = first; i <= tokens.length; i++) {
    const token = tokens[i];
    if (isPunct(token, "(")) depth++;
    else if (isPunct(token, ")")) depth--;
    else if (i === tokens.length || (depth === 0 && isPunct(token, ","))) {
      if (i === first) return null; // an empty item: SQLite's syntax error, left to it
      const star = i === first + 1 && isPunct(tokens[first], "*");
      items.push({ first, last: i - 1, star });
      first = i + 1;
    }
  }
  return { keyword, items };
}

/** The table a DML statement writes, as named in it (`main.t` gives `t`), or null. */
export function dmlTarget(tokens: readonly Token[]): string | null {
  let depth = 0;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (isPunct(token, "(")) depth++;
    else if (isPunct(token, ")")) depth--;
    if (depth !== 0 || token?.type !== "word") continue;
    const word = upper(token);
    if (word !== "INSERT" && word !== "REPLACE" && word !== "UPDATE" && word !== "DELETE") continue;
    let at = i + 1;
    if (upper(tokens[at]) === "OR") at += 2;
    if (upper(tokens[at]) === "INTO" || upper(tokens[at]) === "FROM") at++;
    if (isPunct(tokens[at + 1], ".")) at += 2;
    const name = tokens[at];
    return name?.type === "word" || name?.type === "quoted-ident" ? name.value : null;
  }
  return null;
}

export interface ExactReturning {
  /** The body with the cells appended to its RETURNING clause. */
  body: string;
  /** How many columns the statement returns of its own: the cells follow them. */
  width: number;
}

/**
 * The body with a cell for each RETURNING column, or null when the statement
 * has no clause this can extend (none, or one SQLite will refuse anyway).
 * `columnsOf` gives the columns `*` stands for in the target table.
 */
export function exactReturning(
  bound: BoundBody,
  columnsOf: (table: string) => string[] | null,
): ExactReturning | null {
  const tokens = bound.statement.tokens;
  const clause = returningClause(tokens);
  if (clause === null) return null;
  const cells: string[] = [];
  for (const item of clause.items) {
    if (item.star) {
      const target = dmlTarget(tokens);
      const columns = target === null ? null : columnsOf(target);
      if (columns === null) return null;
      for (const column of columns) cells.push(`(${cellSql(quoteIdent(column))})`);
      continue;
    }
    // `t.*` and other forms SQLite refuses: its own error, from its own text.
    if (isPunct(tokens[item.last], "*") && isPunct(tokens[item.last - 1], ".")) return null;
    const from = bound.starts[item.first];
    const to = bound.ends[item.last];
    if (from === undefined || to === undefined) return null;
    const expr = bound.body.slice(from, to);
    cells.push(`(WITH ${CELL_CTE}(v) AS (SELECT ${expr}) SELECT ${cellSql("v")} FROM ${CELL_CTE})`);
  }
  const end = bound.ends[tokens.length - 1] ?? bound.body.length;
  const body = `${bound.body.slice(0, end)}, ${cells.join(", ")}${bound.body.slice(end)}`;
  return { body, width: cells.length };
}
