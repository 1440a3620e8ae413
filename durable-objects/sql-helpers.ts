/**
 * SQL shared by master and replicas: read-only queries and table checksums.
 */
import { RowHasher } from "../core/checksum";
import { quoteIdent } from "../core/sql-lexer";
import { ApiError } from "../core/errors";
import type { NodeChecksums, SqlValue, TableChecksum } from "../core/protocol";
import { guardRead, isReservedName } from "../core/statement-guard";

/** Most rows one query returns; past it the client gets 413 and should page. */
export const MAX_QUERY_ROWS = 10_000;

export function runQuery(
  sql: SqlStorage,
  text: string,
  params: readonly SqlValue[],
): Record<string, unknown>[] {
  guardRead(text);
  const rows: Record<string, unknown>[] = [];
  try {
    for (const row of sql.exec(text, ...params)) {
      if (rows.length >= MAX_QUERY_ROWS) {
        throw new ApiError(
          "PAYLOAD_TOO_LARGE",
          `the result has more than ${MAX_QUERY_ROWS} rows: add a LIMIT and page with a WHERE on the key`,
          { maxRows: MAX_QUERY_ROWS },
        );
      }
      rows.push(toJsonRow(row));
    }
  } catch (error) {
    throw asSqlError(error);
  }
  return rows;
}

/** Blobs become `{"base64": …}` so rows stay valid JSON. */
export function toJsonRow(row: Record<string, SqlStorageValue>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) {
    out[key] = value instanceof ArrayBuffer ? { base64: toBase64(value) } : value;
  }
  return out;
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
