/**
 * Where SQLite may have picked rowids at random. A rowid table (or an fts5
 * table, whose rows are rowid rows of its `_content`) that holds rowid 2^63-1
 * gives every insert that names no rowid a random one, so a statement that
 * inserted there would pick other rowids on each replica replaying it. Rows
 * shipped as rows carry the master's rowids and are safe; a statement shipped
 * as its text is not, and is checked here after it ran: a large write goes as
 * its rows instead, a write to fts5 (which must go as its text) is refused.
 */
import { ApiError } from "../../core/errors";
import type { Change } from "../../core/row-capture";
import { quoteIdent } from "../../core/sql-lexer";
import { fts5ContentTable } from "../../core/virtual-table-spec";
import type { SqlNode } from "./schema";

const MAX_ROWID = "9223372036854775807";

function holdsMaxRowid(node: SqlNode, table: string, rowid: string): boolean {
  const top = node.sql
    .exec<{ top: string | null }>(
      `SELECT CAST(max(${rowid}) AS TEXT) AS top FROM ${quoteIdent(table)}`,
    )
    .one().top;
  return top === MAX_ROWID;
}

/** Rowid tables the captured changes inserted into that hold rowid 2^63-1. */
export function insertedAtMaxRowid(node: SqlNode, changes: readonly Change[]): string[] {
  const inserted = new Set<string>();
  for (const change of changes) if (change.op === "I") inserted.add(change.t);
  const out: string[] = [];
  for (const name of inserted) {
    const key = node.schema.table(name)?.key;
    if (key?.kind === "rowid" && holdsMaxRowid(node, name, key.expr)) out.push(name);
  }
  return out;
}

/** fts5 tables that hold rowid 2^63-1 (read from their `_content`, by its key). */
function fts5AtMaxRowid(node: SqlNode): string[] {
  const out: string[] = [];
  for (const table of node.schema.tables().values()) {
    if (table.kind !== "virtual") continue;
    if (holdsMaxRowid(node, fts5ContentTable(table.name), "id")) out.push(table.name);
  }
  return out;
}

/**
 * For a write replicas must replay as its statement (it writes fts5): refused
 * when it leaves an fts5 table at rowid 2^63-1, or inserted into a table that
 * holds it, where SQLite may have picked rowids at random.
 */
export function refuseRandomRowids(node: SqlNode, changes: readonly Change[]): void {
  const tables = [...fts5AtMaxRowid(node), ...insertedAtMaxRowid(node, changes)];
  const name = tables[0];
  if (name === undefined) return;
  throw new ApiError(
    "NON_DETERMINISTIC",
    `rowid ${MAX_ROWID} in table ${name} is not allowed in a write to a virtual table: once a ` +
      "table holds the largest rowid, SQLite picks the rowids of later inserts at random, and " +
      "replicas replay a write to fts5 as its statement, so each would pick other ones; use " +
      "smaller rowids",
    { construct: "rowid 2^63-1 in a write to a virtual table", name },
  );
}
