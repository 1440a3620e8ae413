/**
 * Exact RETURNING rows. The runtime hands a write's RETURNING rows over as JS
 * values: an INTEGER as a double (rounded past 2^53), REAL 2.0 as the number
 * 2, -0.0 as 0. A query is read through a wrapper that renders each value as
 * a cell in SQL (durable-objects/sqlite/read.ts), but a write cannot be
 * wrapped, so its RETURNING clause is replaced by one column that renders the
 * clause's items as one row of cells:
 *
 *   RETURNING id, v + 1
 *   RETURNING (WITH _repl_cell(c0, c1) AS (SELECT id, v + 1 LIMIT -1 OFFSET 0)
 *              SELECT <cells of c0, c1> FROM _repl_cell)
 *
 * One column whatever the width, so a 100-column table's `RETURNING *` stays
 * within the platform's 100 result columns; each item is written once, and
 * the OFFSET keeps SQLite from copying it into every place the cells read it.
 * `*` becomes the target's columns by name. SQLite names the columns as it
 * would have named the clause's: a probe, `SELECT <items> FROM <target>
 * LIMIT 0` (SQLite names a SELECT's columns and a RETURNING clause's alike),
 * with the statement's WITH clause in front.
 */
import type { DmlShape } from "./dml-shape";
import { quoteIdent, type Token } from "./sql-lexer";
import { type BoundBody, GUARD_CTE, parameterNumbers } from "./sql-params";
import { tokenize } from "./sql-lexer";
import { rowSql } from "./sql-value";

export const CELL_CTE = "_repl_cell";

export interface ExactReturning {
  /** The body with its RETURNING items replaced by one column of cells. */
  body: string;
  /** How many values each row carries. */
  width: number;
}

const isPunct = (token: Token | undefined, text: string) =>
  token?.type === "punct" && token.text === text;

/**
 * The body with one column of cells for its RETURNING clause, or null when
 * it has no clause this can rewrite (none, or one SQLite will refuse anyway).
 * `columnsOf` gives the columns `*` stands for in the target table.
 */
export function exactReturning(
  bound: BoundBody,
  shape: DmlShape,
  columnsOf: () => string[] | null,
): ExactReturning | null {
  const clause = shape.returning;
  if (clause === null) return null;
  const tokens = bound.statement.tokens;
  const items: string[] = [];
  for (const item of clause.items) {
    if (item.star) {
      const columns = columnsOf();
      if (columns === null) return null;
      items.push(...columns.map(quoteIdent));
      continue;
    }
    // `t.*` and other forms SQLite refuses: its own error, from its own text.
    if (isPunct(tokens[item.last], "*")) return null;
    const from = bound.starts[item.first];
    const to = bound.ends[item.last];
    if (from === undefined || to === undefined) return null;
    items.push(bound.body.slice(from, to));
  }
  const names = items.map((_, i) => `c${i}`);
  const start = bound.ends[clause.keyword];
  const end = bound.ends[tokens.length - 1];
  if (start === undefined || end === undefined) return null;
  // The WHERE names a column of the row, always true: the subquery is then
  // correlated and runs for each row, as the clause's items do; one that
  // named nothing of the row (`(SELECT count(*) FROM t)`) would run once.
  const column = columnsOf()?.[0];
  if (column === undefined) return null;
  const row = quoteIdent(column);
  const cells =
    ` (WITH ${CELL_CTE}(${names.join(", ")}) AS (SELECT ${items.join(", ")} ` +
    `WHERE ${row} IS ${row} LIMIT -1 OFFSET 0) SELECT ${rowSql(names)} FROM ${CELL_CTE})`;
  return { body: bound.body.slice(0, start) + cells + bound.body.slice(end), width: items.length };
}

export interface NamesProbe {
  sql: string;
  /** How many parameters it has: bind that many nulls (names do not depend on values). */
  params: number;
}

/**
 * The statement that names a RETURNING clause's columns as SQLite does:
 * `WITH <guard>, <the statement's CTEs> SELECT <items as sent> FROM <target> LIMIT 0`.
 */
export function returningNamesProbe(
  statement: { sql: string; tokens: readonly Token[] },
  shape: DmlShape,
): NamesProbe | null {
  // A plain `?` (number 1): the statement's own unnumbered parameters keep within SQLite's 100.
  const guardCte = `${GUARD_CTE}(x) AS (SELECT ?)`;
  const { sql, tokens } = statement;
  const clause = shape.returning;
  const first = tokens[clause?.keyword ?? -1];
  const last = tokens[tokens.length - 1];
  const target = [tokens[shape.target.first], tokens[shape.target.last]];
  if (clause === null || first === undefined || last === undefined) return null;
  if (target[0] === undefined || target[1] === undefined) return null;
  const items = sql.slice(first.end, last.end);
  // Qualified, so that a CTE of the statement's own named like the target
  // does not stand in for it.
  const named = sql.slice(target[0].start, target[1].end);
  const from = shape.target.first === shape.target.last ? `main.${named}` : named;
  let ctes = "";
  if (shape.verb > 0) {
    const recursive = tokens[1]?.type === "word" && tokens[1].value.toUpperCase() === "RECURSIVE";
    const open = tokens[recursive ? 2 : 1];
    const close = tokens[shape.verb - 1];
    if (open === undefined || close === undefined) return null;
    ctes = `${recursive ? "RECURSIVE " : ""}${guardCte}, ${sql.slice(open.start, close.end)}`;
  } else ctes = guardCte;
  const text = `WITH ${ctes} SELECT ${items} FROM ${from} LIMIT 0`;
  const numbers = parameterNumbers(tokenize(text));
  return { sql: text, params: Math.max(0, ...numbers.values()) };
}
