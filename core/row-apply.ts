/**
 * Replaying captured changes on a replica: each image becomes the row, keyed
 * exactly as on the master. INSERT OR REPLACE and UPDATE OR REPLACE mirror what
 * REPLACE did on the master (it deletes the conflicting row without a capture,
 * and the replica, holding the same rows, deletes the same one).
 *
 * Values stay text all the way into SQLite, which decodes them itself: an
 * INTEGER by CAST from its decimal, a REAL by CAST from quote()'s text (quote()
 * prints a REAL so that SQLite's own parser reads back the same double, and
 * every REAL cell comes from quote() on the master), TEXT and BLOB from hex
 * (printable ASCII text as itself). No value crosses the runtime's JS number
 * conversion on the way.
 */
import type { Change } from "./row-capture";
import type { TableInfo } from "./schema-info";
import type { Bindable } from "./sql-params";
import { quoteIdent } from "./sql-lexer";

export interface ApplyStatement {
  sql: string;
  params: Bindable[];
  /**
   * An UPDATE or DELETE of one row by its key: on a replica holding the
   * master's rows it must find that row (write at least one row).
   */
  mustHit?: true;
}

/** SQLite's limit on parameters per statement on Durable Objects. */
const MAX_PARAMS = 100;
/** Rows per multi-row INSERT (its parameters permitting). */
const MAX_INSERT_ROWS = 200;

const SEPARATOR = "\u001f";

/**
 * SQL that turns the body of a cell of kind `kind`, bound to `p`, back into
 * its value: typed here, once per value, so SQLite only casts (the statement
 * text then varies with the row's storage classes, a handful of texts per
 * table, each compiled once). Null when the cell needs no parameter.
 */
function decodeSql(kind: string, p: string): string | null {
  switch (kind) {
    case "i":
      return `CAST(${p} AS INTEGER)`;
    case "r":
      return `CAST(${p} AS REAL)`;
    case "s":
      return p;
    case "t":
      return `CAST(unhex(${p}) AS TEXT)`;
    case "b":
      return `unhex(${p})`;
    default:
      return null;
  }
}

/** A cell as an SQL literal, for tables too wide for parameters. */
function cellLiteral(cell: string): string {
  const body = cell.slice(1);
  switch (cell.charAt(0)) {
    case "i":
      return body === "-9223372036854775808" ? "(-9223372036854775807 - 1)" : `(${body})`;
    case "r":
      return body === "-0.0" ? "(-0.0)" : `CAST('${body}' AS REAL)`;
    case "s":
      return `'${body.replaceAll("'", "''")}'`;
    case "t":
      return `CAST(X'${body}' AS TEXT)`;
    case "b":
      return `X'${body}'`;
    default:
      return "NULL";
  }
}

/** Places cells into one statement: as parameters decoded in SQL while they fit, else as literals. */
class Cells {
  readonly params: string[] = [];

  constructor(private readonly literals: boolean) {}

  sql(cell: string): string {
    if (this.literals) return cellLiteral(cell);
    const decode = decodeSql(cell.charAt(0), `?${this.params.length + 1}`);
    if (decode === null) return "NULL";
    this.params.push(cell.slice(1));
    return decode;
  }
}

function cells(row: string | undefined): string[] {
  return row === undefined || row === "" ? [] : row.split(SEPARATOR);
}

function keyColumns(table: TableInfo): string[] {
  return table.key.kind === "rowid" ? [table.key.expr] : table.key.columns.map(quoteIdent);
}

/** Column list of an image: the rowid first for rowid tables, then the data columns. */
function imageColumns(table: TableInfo): string[] {
  const data = table.columns.map(quoteIdent);
  return table.key.kind === "rowid" ? [table.key.expr, ...data] : data;
}

function where(table: TableInfo, key: string, values: Cells): string {
  const keyCells = cells(key);
  return keyColumns(table)
    .map((column, i) => `${column} = ${values.sql(keyCells[i] ?? "n")}`)
    .join(" AND ");
}

/** Statements that replay `changes`, all of one table, in order. */
export function applyChanges(table: TableInfo, changes: readonly Change[]): ApplyStatement[] {
  const out: ApplyStatement[] = [];
  const target = quoteIdent(table.name);
  const columns = imageColumns(table);
  const literals = columns.length + 8 > MAX_PARAMS;
  let inserts: string[] = [];
  let insertCells = new Cells(literals);
  const flushInserts = () => {
    if (inserts.length === 0) return;
    out.push({
      sql: `INSERT OR REPLACE INTO ${target} (${columns.join(", ")}) VALUES ${inserts.join(", ")}`,
      params: insertCells.params,
    });
    inserts = [];
    insertCells = new Cells(literals);
  };
  for (const change of changes) {
    if (change.op === "I") {
      if (!literals && insertCells.params.length + columns.length > MAX_PARAMS) flushInserts();
      const row = cells(change.img);
      inserts.push(`(${columns.map((_, i) => insertCells.sql(row[i] ?? "n")).join(", ")})`);
      if (inserts.length >= MAX_INSERT_ROWS) flushInserts();
      continue;
    }
    flushInserts();
    const values = new Cells(literals);
    if (change.op === "D") {
      out.push({
        sql: `DELETE FROM ${target} WHERE ${where(table, change.ok ?? "", values)}`,
        params: values.params,
        mustHit: true,
      });
      continue;
    }
    const row = cells(change.img);
    // Every column is set, the key too: foreign-key ON UPDATE actions fire only
    // when a key's value changes (SQLite adds WHEN NOT (old.k IS new.k)).
    const sets = columns.map((column, i) => `${column} = ${values.sql(row[i] ?? "n")}`);
    out.push({
      sql: `UPDATE OR REPLACE ${target} SET ${sets.join(", ")} WHERE ${where(table, change.ok ?? "", values)}`,
      params: values.params,
      mustHit: true,
    });
  }
  flushInserts();
  return out;
}
