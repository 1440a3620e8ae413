/**
 * Result column names, as SQLite gives them for the statement as the client
 * sent it. The statement that runs is another text (parameters renumbered
 * and cast, counters bound, a RETURNING clause rewritten, a wrapper around a
 * query), and SQLite names an unaliased column by its text, so the names are
 * asked of SQLite with the text as sent, every parameter bound to NULL: a
 * name never depends on a value. Kept per text until the schema changes.
 */
import type { DmlShape } from "../../core/dml-shape";
import { returningNamesProbe } from "../../core/returning";
import { tokenize } from "../../core/sql-lexer";
import { type BoundBody, GUARD_CTE, parameterNumbers } from "../../core/sql-params";
import type { SingleStatement } from "../../core/sql-statement";
import type { SqlNode } from "./schema";

/** The statement's text as sent: its first token to its last. */
export function sentText(statement: SingleStatement): string {
  const first = statement.tokens[0];
  const last = statement.tokens[statement.tokens.length - 1];
  return first === undefined || last === undefined
    ? ""
    : statement.sql.slice(first.start, last.end);
}

/** NULLs for every parameter of `text`. */
function nulls(text: string): null[] {
  const numbers = parameterNumbers(tokenize(text));
  return Array.from({ length: Math.max(0, ...numbers.values()) }, () => null);
}

function columnsOf(node: SqlNode, text: string, drain: boolean): string[] {
  const cursor = node.sql.exec(text, ...nulls(text));
  const names = cursor.columnNames;
  if (drain) {
    for (const _ of cursor.raw()) {
      // finish the statement (workerd reuses a compiled statement only once finished)
    }
  } else cursor.toArray();
  return names;
}

/**
 * The statement, a guard parameter in front. The guard is a plain `?` (number
 * 1), so the statement's own unnumbered parameters keep within SQLite's 100.
 */
function guarded(text: string): string {
  const tokens = tokenize(text);
  const cte = `${GUARD_CTE}(x) AS (SELECT ?)`;
  const first = tokens[0];
  if (first?.type !== "word" || first.value.toUpperCase() !== "WITH") return `WITH ${cte} ${text}`;
  const second = tokens[1];
  const recursive = second?.type === "word" && second.value.toUpperCase() === "RECURSIVE";
  const after = (recursive ? second : first).end;
  return `${text.slice(0, after)} ${cte},${text.slice(after)}`;
}

/**
 * The statement with its own top-level LIMIT made `LIMIT 0` (or one added):
 * named as the statement is, it returns no row and computes none, so an
 * endless recursive CTE costs nothing. LIMIT is a reserved word and the
 * clause ends a SELECT; a LIMIT inside parentheses is a subquery's.
 */
function limitedToNothing(statement: SingleStatement): string {
  const { sql, tokens } = statement;
  const first = tokens[0];
  if (first === undefined) return "";
  let depth = 0;
  let lastCore = "SELECT";
  for (const token of tokens) {
    if (token.type === "punct" && token.text === "(") depth++;
    else if (token.type === "punct" && token.text === ")") depth--;
    else if (depth === 0 && token.type === "word") {
      const word = token.value.toUpperCase();
      if (word === "SELECT" || word === "VALUES") lastCore = word;
      if (word === "LIMIT") return `${sql.slice(first.start, token.start)}LIMIT 0`;
    }
  }
  // A VALUES list takes no LIMIT: its columns are named column1, column2, ...
  // in a subquery as at the top.
  const text = sentText(statement);
  return lastCore === "VALUES" ? `SELECT * FROM (${text}) LIMIT 0` : `${text} LIMIT 0`;
}

/**
 * The column names of a query (SELECT, WITH, VALUES), as SQLite names them
 * for the text sent: the statement itself, limited to no row, every
 * parameter NULL. A subquery probe (`SELECT * FROM (<text>)`) is named by
 * other rules (duplicates renamed `name:N`, COLLATE dropped, rowid aliases,
 * `true` as `columnN`), so it cannot stand in.
 */
export function queryNames(node: SqlNode, bound: BoundBody): string[] {
  const text = sentText(bound.statement);
  const known = node.schema.names(text);
  if (known !== undefined) return known;
  const limited = limitedToNothing(bound.statement);
  const names = columnsOf(node, guarded(limited), true);
  node.schema.rememberNames(text, names);
  return names;
}

/** The names of a DML statement's RETURNING columns, or null when SQLite cannot tell them. */
export function returningNames(node: SqlNode, bound: BoundBody, shape: DmlShape): string[] | null {
  const probe = returningNamesProbe(bound.statement, shape);
  if (probe === null) return null;
  const known = node.schema.names(probe.sql);
  if (known !== undefined) return known;
  try {
    const names = columnsOf(node, probe.sql, false);
    node.schema.rememberNames(probe.sql, names);
    return names;
  } catch {
    return null; // the statement itself will say what SQLite thinks of it
  }
}

/** The columns `RETURNING *` stands for: SQLite's own expansion of `SELECT *` on the target. */
export function starColumns(node: SqlNode, bound: BoundBody, shape: DmlShape): string[] | null {
  const { sql, tokens } = bound.statement;
  const first = tokens[shape.target.first];
  const last = tokens[shape.target.last];
  if (first === undefined || last === undefined) return null;
  try {
    return columnsOf(node, `SELECT * FROM ${sql.slice(first.start, last.end)} LIMIT 0`, false);
  } catch {
    return null;
  }
}
