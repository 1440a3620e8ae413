/**
 * An fts5 table's settings (`INSERT INTO f(f, rank) VALUES('rank', ...)`, and
 * 'automerge', 'pgsz', ...) live in its `<name>_config` shadow table, beside
 * its rows: a rebuilt replica needs them too, or it ranks and merges
 * differently, and verify must see them. Each value is read as SQLite quotes
 * it, so it is put back exactly as it was.
 */
import type { Fts5Setting } from "../../core/protocol";
import { quoteIdent } from "../../core/sql-lexer";
import type { SqlNode } from "./schema";

/** fts5's own record of its format, set when the table is made. */
const FORMAT_KEY = "version";

export function readFts5Settings(node: SqlNode): Fts5Setting[] {
  const out: Fts5Setting[] = [];
  for (const table of node.schema.tables().values()) {
    if (table.kind !== "virtual") continue;
    const config = quoteIdent(`${table.name}_config`);
    for (const { k, v } of node.sql
      .exec<{ k: string; v: string }>(
        `SELECT CAST(k AS TEXT) AS k, quote(v) AS v FROM ${config} WHERE k <> ? ORDER BY k`,
        FORMAT_KEY,
      )
      .toArray()) {
      out.push({ table: table.name, key: k, value: v });
    }
  }
  return out.sort((a, b) => (a.table < b.table ? -1 : a.table > b.table ? 1 : 0));
}

export function restoreFts5Settings(sql: SqlStorage, settings: readonly Fts5Setting[]): void {
  for (const { table, key, value } of settings) {
    const name = quoteIdent(table);
    // `value` is quote()'s output on the master: an SQL literal of the value.
    sql.exec(`INSERT INTO ${name} (${name}, rank) VALUES (?, ${value})`, key);
  }
}
