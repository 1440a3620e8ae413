/**
 * SQL shared by master and replicas: read-only queries and table checksums.
 */
import { RowHasher } from "../core/checksum";
import { quoteIdent } from "../core/sql-lexer";
import { ApiError } from "../core/errors";
import type { NodeChecksums, ResultFormat, SqlValue, TableChecksum } from "../core/protocol";
import { guardRead, isReservedName } from "../core/statement-guard";

/** Most rows one query, or one statement of an exec, returns; past it the client gets 413. */
export const MAX_QUERY_ROWS = 10_000;

/**
 * Most bytes of row data one response carries (a query, or every statement of
 * an exec together), counted as the JSON text would be: column names, strings
 * by length, blobs by their base64 text. It keeps a result well under workerd's
 * 32 MiB RPC limit and the memory of the node that reads it.
 */
export const MAX_RESULT_BYTES = 8 * 1024 * 1024;

/**
 * Reads cursors through into JSON rows, refusing with 413 as soon as a
 * statement's rows or the response's bytes pass the limits: a read is never
 * read further than that, so an endless recursive CTE stops too.
 */
export class ResultBudget {
  private bytes = 0;

  constructor(
    private readonly maxRows = MAX_QUERY_ROWS,
    private readonly maxBytes = MAX_RESULT_BYTES,
  ) {}

  /**
   * `writes`: the statement changes rows (INSERT ... RETURNING). Its changes are
   * all made at the first row and its rows are buffered, so reading the rest is
   * finite; left open, it would stop the transaction from rolling back at all.
   */
  read(
    cursor: SqlStorageCursor<Record<string, SqlStorageValue>>,
    writes = false,
  ): Record<string, unknown>[] {
    const rows: Record<string, unknown>[] = [];
    for (const row of cursor) {
      const error = this.take(rows.length, row);
      if (error !== null) {
        if (writes) for (const _ of cursor.raw());
        throw error;
      }
      rows.push(toJsonRow(row));
    }
    return rows;
  }

  /** The same, as arrays in select order (duplicate and numeric column names survive). */
  readArrays(cursor: SqlStorageCursor<Record<string, SqlStorageValue>>): unknown[][] {
    const names = cursor.columnNames;
    const rows: unknown[][] = [];
    for (const row of cursor.raw()) {
      const sized: Record<string, SqlStorageValue> = {};
      row.forEach((value, i) => {
        sized[`${i}:${names[i] ?? ""}`] = value;
      });
      const error = this.take(rows.length, sized);
      if (error !== null) throw error;
      rows.push(row.map(toJsonValue));
    }
    return rows;
  }

  /** The error that refuses one more row, or null when it fits. */
  private take(count: number, row: Record<string, SqlStorageValue>): ApiError | null {
    if (count >= this.maxRows) {
      return new ApiError(
        "PAYLOAD_TOO_LARGE",
        `the result has more than ${this.maxRows} rows: add a LIMIT and page with a WHERE on the key`,
        { maxRows: this.maxRows },
      );
    }
    this.bytes += jsonSize(row);
    if (this.bytes <= this.maxBytes) return null;
    return new ApiError(
      "PAYLOAD_TOO_LARGE",
      `the result is over ${this.maxBytes} bytes: select fewer columns or page with a LIMIT`,
      { maxBytes: this.maxBytes },
    );
  }
}

/**
 * About the length of a row as JSON text: names and strings by their length,
 * blobs by their base64 text, numbers and nulls as 8.
 */
function jsonSize(row: Record<string, SqlStorageValue>): number {
  let size = 2;
  for (const [key, value] of Object.entries(row)) {
    size += key.length + 4;
    if (typeof value === "string") size += value.length + 2;
    else if (value instanceof ArrayBuffer) size += Math.ceil(value.byteLength / 3) * 4 + 14;
    else size += 8;
  }
  return size;
}

export type QueryRows =
  | { rows: Record<string, unknown>[] }
  | { columns: string[]; rows: unknown[][] };

export function runQuery(
  sql: SqlStorage,
  text: string,
  params: readonly SqlValue[],
  format: ResultFormat = "objects",
): QueryRows {
  guardRead(text);
  try {
    const cursor = sql.exec(text, ...params);
    if (format === "objects") return { rows: new ResultBudget().read(cursor) };
    return { columns: cursor.columnNames, rows: new ResultBudget().readArrays(cursor) };
  } catch (error) {
    throw asSqlError(error);
  }
}

/** Blobs become `{"base64": …}` so rows stay valid JSON. */
export function toJsonRow(row: Record<string, SqlStorageValue>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) out[key] = toJsonValue(value);
  return out;
}

function toJsonValue(value: SqlStorageValue): unknown {
  return value instanceof ArrayBuffer ? { base64: toBase64(value) } : value;
}

function toBase64(buffer: ArrayBuffer): string {
  let binary = "";
  for (const byte of new Uint8Array(buffer)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** SQLite's own errors are the client's: 400 INVALID_SQL with SQLite's words. */
export function asSqlError(error: unknown): unknown {
  if (error instanceof ApiError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (
    /SQLITE_|no such|syntax error|constraint|datatype mismatch|too many|not authorized|incomplete input|unrecognized token|has no column|already exists|misuse|out of range|cannot|may not|unsupported|parse|Wrong number of parameter|no more rows|bind/i.test(
      message,
    )
  ) {
    const clean = message.replace(/^Error:\s*/, "");
    return new ApiError("INVALID_SQL", clean, undefined, error);
  }
  return error;
}

export function userTables(sql: SqlStorage): string[] {
  const names: string[] = [];
  for (const row of sql.exec<{ name: string }>(
    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
  )) {
    if (!isReservedName(row.name, true)) names.push(row.name);
  }
  return names;
}

export function nodeChecksums(sql: SqlStorage, node: string, appliedLsn: number): NodeChecksums {
  const tables: Record<string, TableChecksum> = {};
  const schema = new RowHasher();
  for (const row of sql.exec<{ type: string; name: string; sql: string | null }>(
    "SELECT type, name, sql FROM sqlite_master ORDER BY type, name",
  )) {
    if (isReservedName(row.name, true)) continue;
    schema.addRow(row);
  }
  for (const name of userTables(sql)) {
    const hasher = new RowHasher();
    const quoted = quoteIdent(name);
    let cursor: Iterable<Record<string, SqlStorageValue>>;
    try {
      cursor = sql.exec(`SELECT * FROM ${quoted} ORDER BY rowid`);
    } catch {
      // WITHOUT ROWID tables have no rowid; their scan order is the primary key.
      cursor = sql.exec(`SELECT * FROM ${quoted}`);
    }
    for (const row of cursor) hasher.addRow(row);
    tables[name] = { rows: hasher.rows, checksum: hasher.digest() };
  }
  return { node, appliedLsn, schema: schema.digest(), tables };
}
