/**
 * Replaying captured changes on a replica: each image becomes the row, keyed
 * exactly as on the master. INSERT OR REPLACE and UPDATE OR REPLACE mirror what
 * REPLACE did on the master (it deletes the conflicting row without a capture,
 * and the replica, holding the same rows, deletes the same one). Values are
 * bound exactly (sql-params.ts explains the casts).
 */
import type { Bindable } from "./sql-params";
import type { Change } from "./row-capture";
import type { TableInfo } from "./schema-info";
import { quoteIdent } from "./sql-lexer";
import { type Exact, decodeRow, isTextBytes, literalSql } from "./sql-value";

export interface ApplyStatement {
  sql: string;
  params: Bindable[];
}

/** SQLite's limit on parameters per statement on Durable Objects. */
const MAX_PARAMS = 100;
/** Rows per multi-row INSERT (its parameters permitting). */
const MAX_INSERT_ROWS = 200;

/** Places values into one statement, as parameters while they fit, else as literals. */
class Values {
  readonly params: Bindable[] = [];

  constructor(private readonly literalsOnly: boolean) {}

  sql(value: Exact): string {
    if (this.literalsOnly) {
      // REALs printed with 17 significant digits: SQLite reads them back to the same
      // double; the effects digest would catch a replica where it did not.
      return typeof value === "number" ? realLiteral(value) : literalSql(value);
    }
    if (value === null) return "NULL";
    if (typeof value === "bigint") return `CAST(${this.push(value.toString())} AS INTEGER)`;
    if (typeof value === "number" || typeof value === "string") return this.push(value);
    if (isTextBytes(value)) return `CAST(${this.push(value.textBytes.slice().buffer)} AS TEXT)`;
    return this.push(value.slice().buffer);
  }

  private push(param: Bindable): string {
    this.params.push(param);
    return `?${this.params.length}`;
  }
}

function realLiteral(value: number): string {
  if (Object.is(value, -0)) return "(-0.0)";
  if (value === Number.POSITIVE_INFINITY) return "9e999";
  if (value === Number.NEGATIVE_INFINITY) return "(-9e999)";
  const text = value.toPrecision(17);
  return value < 0 ? `(${text})` : text;
}

function keyColumns(table: TableInfo): string[] {
  return table.key.kind === "rowid" ? [table.key.expr] : table.key.columns.map(quoteIdent);
}

/** Column list of an image: the rowid first for rowid tables, then the data columns. */
function imageColumns(table: TableInfo): string[] {
  const data = table.columns.map(quoteIdent);
  return table.key.kind === "rowid" ? [table.key.expr, ...data] : data;
}

function where(table: TableInfo, key: string, values: Values): string {
  const cells = decodeRow(key);
  return keyColumns(table)
    .map((column, i) => `${column} = ${values.sql(cells[i] ?? null)}`)
    .join(" AND ");
}

function paramsNeeded(columns: number): boolean {
  return columns + 8 > MAX_PARAMS;
}

/** Statements that replay `changes`, all of one table, in order. */
export function applyChanges(table: TableInfo, changes: readonly Change[]): ApplyStatement[] {
  const out: ApplyStatement[] = [];
  const target = quoteIdent(table.name);
  const columns = imageColumns(table);
  const literalsOnly = paramsNeeded(columns.length);
  let inserts: string[] = [];
  let insertValues = new Values(literalsOnly);
  const flushInserts = () => {
    if (inserts.length === 0) return;
    out.push({
      sql: `INSERT OR REPLACE INTO ${target} (${columns.join(", ")}) VALUES ${inserts.join(", ")}`,
      params: insertValues.params,
    });
    inserts = [];
    insertValues = new Values(literalsOnly);
  };
  for (const change of changes) {
    if (change.op === "I") {
      const row = decodeRow(change.img ?? "");
      if (!literalsOnly && insertValues.params.length + columns.length > MAX_PARAMS) flushInserts();
      inserts.push(`(${row.map((v) => insertValues.sql(v)).join(", ")})`);
      if (inserts.length >= MAX_INSERT_ROWS) flushInserts();
      continue;
    }
    flushInserts();
    const values = new Values(literalsOnly);
    if (change.op === "D") {
      out.push({
        sql: `DELETE FROM ${target} WHERE ${where(table, change.ok ?? "", values)}`,
        params: values.params,
      });
      continue;
    }
    const row = decodeRow(change.img ?? "");
    // Every column is set, the key too: foreign-key ON UPDATE actions fire only
    // when a key's value changes (SQLite adds WHEN NOT (old.k IS new.k)).
    const sets = columns.map((column, i) => `${column} = ${values.sql(row[i] ?? null)}`);
    out.push({
      sql: `UPDATE OR REPLACE ${target} SET ${sets.join(", ")} WHERE ${where(table, change.ok ?? "", values)}`,
      params: values.params,
    });
  }
  flushInserts();
  return out;
}
