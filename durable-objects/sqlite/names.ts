/**
 * Result column names, as SQLite gives them for the statement as the client
 * sent it. The statement that runs is another text (parameters renumbered
 * and cast, counters bound, a RETURNING clause rewritten, a wrapper around a
 * query), and SQLite names an unaliased column by its text, so the names are
 * asked of SQLite with the text as sent, in probes that read nothing
 * (`LIMIT 0`) with every parameter bound to NULL: a name never depends on a
 * value. Kept per text until the schema changes.
 */
import type { DmlShape } from "../../core/dml-shape";
import { returningNamesProbe } from "../../core/returning";
import { tokenize } from "../../core/sql-lexer";
import {
  type BoundBody,
  guardCte,
  guardedStatement,
  parameterNumbers,
} from "../../core/sql-params";
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
 * Names SQLite gave the columns of `SELECT * FROM (<text>)`: a duplicate
 * becomes `name:N`. Undone where that is certain; null where the text itself
 * holds such a name (an alias "a:1"), which only the statement can settle.
 */
function undoSubqueryRenames(names: readonly string[], text: string): string[] | null {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const name of names) {
    const renamed = /^(.*):(\d+)$/.exec(name);
    let original = name;
    if (renamed !== null && seen.has(renamed[1] ?? "")) {
      if (text.includes(name)) return null;
      original = renamed[1] ?? name;
    }
    seen.add(original);
    out.push(original);
  }
  return out;
}

/** The column names of a query (SELECT, WITH, VALUES), as SQLite names them for the text sent. */
export function queryNames(node: SqlNode, bound: BoundBody): string[] {
  const text = sentText(bound.statement);
  const known = node.schema.names(text);
  if (known !== undefined) return known;
  const probed = columnsOf(
    node,
    `WITH ${guardCte(bound.guard)} SELECT * FROM (${text}) LIMIT 0`,
    false,
  );
  let names = undoSubqueryRenames(probed, text);
  if (names === null) {
    // Rare: run the statement itself (parameters NULL) for its own names.
    const own = guardedStatement({ ...bound, body: text, params: [] });
    names = columnsOf(node, own.sql, true);
  }
  node.schema.rememberNames(text, names);
  return names;
}

/** The names of a DML statement's RETURNING columns, or null when SQLite cannot tell them. */
export function returningNames(node: SqlNode, bound: BoundBody, shape: DmlShape): string[] | null {
  const probe = returningNamesProbe(bound.statement, shape, bound.guard);
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
