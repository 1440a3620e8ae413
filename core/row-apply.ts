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
import { type TableInfo, imageSqlColumns, keySqlColumns } from "./schema-info";
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
/** Rows per multi-row INSERT. */
const MAX_INSERT_ROWS = 200;
/**
 * Columns a result set may have on Durable Objects: a multi-row VALUES is one,
 * so rows wider than this (a 100-column table and its rowid) go one at a time.
 */
const MAX_COLUMNS = 100;
/**
 * Statement text a multi-row INSERT stops growing at: Durable Objects refuse
 * statements over 100 KB, and a wide table's rows are long.
 */
const MAX_INSERT_TEXT = 60_000;

const SEPARATOR = "\u001f";

/**
 * SQL that turns the body of a cell of kind `kind`, found at `p` (a parameter,
 * or an element of the statement's JSON array parameter), back into its value:
 * typed here, once per value, so SQLite only casts (the statement text then
 * varies with the row's storage classes, a handful of texts per table, each
 * compiled once). Null when the cell needs no value.
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

/**
 * Places a statement's cells: each body its own parameter when all of them
 * fit SQLite's limit, else every body in one parameter holding a JSON array,
 * each read back with `->>` (a JSON string comes back as the same TEXT, and
 * every body is ASCII: decimal, quote()'s REAL, hex, or printable text).
 * Either way the statement text depends only on the columns and the cells'
 * kinds, and no value is written into it.
 */
class Cells {
  private readonly bodies: string[] = [];

  constructor(private readonly asArray: boolean) {}

  /** For a statement of at most `count` cells. */
  static forCount(count: number): Cells {
    return new Cells(count > MAX_PARAMS);
  }

  sql(cell: string): string {
    const at = this.asArray ? `(?1 ->> ${this.bodies.length})` : `?${this.bodies.length + 1}`;
    const decode = decodeSql(cell.charAt(0), at);
    if (decode === null) return "NULL";
    this.bodies.push(cell.slice(1));
    return decode;
  }

  get count(): number {
    return this.bodies.length;
  }

  get params(): Bindable[] {
    return this.asArray ? [JSON.stringify(this.bodies)] : this.bodies;
  }
}

function cells(row: string | undefined): string[] {
  return row === undefined || row === "" ? [] : row.split(SEPARATOR);
}

function where(table: TableInfo, key: string, values: Cells): string {
  const keyCells = cells(key);
  return keySqlColumns(table)
    .map((column, i) => `${column} = ${values.sql(keyCells[i] ?? "n")}`)
    .join(" AND ");
}

/**
 * An UPDATE as the image it left: every column set, the key too when it
 * changed, since foreign-key ON UPDATE actions fire only when a key's value
 * changes (SQLite adds WHEN NOT (old.k IS new.k)). A set list holds at most 100
 * columns here, so a row of a 100-column rowid table cannot move in one
 * statement, and any two would pass through a state the master never had
 * (checked against its CHECKs and partial indexes): the master refuses such a
 * move (`rowsTooWideToMove`).
 */
function updateStatement(table: TableInfo, change: Change): ApplyStatement {
  const target = quoteIdent(table.name);
  const columns = imageSqlColumns(table);
  const keys = new Set(keySqlColumns(table));
  const row = cells(change.img);
  const oldKey = change.ok ?? "";
  const moved = (change.nk ?? oldKey) !== oldKey;
  const all = columns.map((_, i) => i);
  const data = all.filter((i) => !keys.has(columns[i] ?? ""));
  const set = moved || data.length === 0 ? all : data;
  const values = Cells.forCount(set.length + keys.size);
  const sets = set.map((i) => `${columns[i]} = ${values.sql(row[i] ?? "n")}`);
  return {
    sql: `UPDATE OR REPLACE ${target} SET ${sets.join(", ")} WHERE ${where(table, oldKey, values)}`,
    params: values.params,
    mustHit: true,
  };
}

/** Tables whose rows have more cells than one set list may hold (a 100-column rowid table). */
export function rowsTooWideToMove(table: TableInfo): boolean {
  return imageSqlColumns(table).length > MAX_COLUMNS;
}

/** Statements that replay `changes`, all of one table, in order. */
export function applyChanges(table: TableInfo, changes: readonly Change[]): ApplyStatement[] {
  const out: ApplyStatement[] = [];
  const target = quoteIdent(table.name);
  const columns = imageSqlColumns(table);
  const head = `INSERT OR REPLACE INTO ${target} (${columns.join(", ")}) VALUES `;
  // A row's cells fit as parameters when a whole row does; rows are added while
  // the next one still fits too.
  const rowsAsParams = columns.length <= MAX_PARAMS;
  const newInsertCells = () => new Cells(!rowsAsParams);
  let inserts: string[] = [];
  let insertText = 0;
  let insertCells = newInsertCells();
  const flushInserts = () => {
    if (inserts.length === 0) return;
    out.push({ sql: head + inserts.join(", "), params: insertCells.params });
    inserts = [];
    insertText = 0;
    insertCells = newInsertCells();
  };
  for (const change of changes) {
    if (change.op === "I") {
      if (rowsAsParams && insertCells.count + columns.length > MAX_PARAMS) flushInserts();
      const row = cells(change.img);
      const values = `(${columns.map((_, i) => insertCells.sql(row[i] ?? "n")).join(", ")})`;
      inserts.push(values);
      insertText += values.length + 2;
      if (
        inserts.length >= (columns.length > MAX_COLUMNS ? 1 : MAX_INSERT_ROWS) ||
        head.length + insertText >= MAX_INSERT_TEXT
      ) {
        flushInserts();
      }
      continue;
    }
    flushInserts();
    const keyCount = keySqlColumns(table).length;
    if (change.op === "D") {
      const values = Cells.forCount(keyCount);
      out.push({
        sql: `DELETE FROM ${target} WHERE ${where(table, change.ok ?? "", values)}`,
        params: values.params,
        mustHit: true,
      });
      continue;
    }
    out.push(updateStatement(table, change));
  }
  flushInserts();
  return out;
}
