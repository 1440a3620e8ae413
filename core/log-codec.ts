/**
 * The log record codec: how a committed transaction is stored in the master's
 * log table and shipped to replicas. Statements are stored after the
 * determinism guard rewrote them, so replaying them gives the same bytes.
 */
import type { LogRecord, SqlValue, Statement } from "./protocol";

export interface LogRow {
  lsn: number;
  term: number;
  ts: number;
  body: string;
}

const isSqlValue = (v: unknown): v is SqlValue =>
  v === null || typeof v === "string" || (typeof v === "number" && Number.isFinite(v));

export function encodeStatements(statements: readonly Statement[]): string {
  return JSON.stringify(statements.map((s) => [s.sql, s.params]));
}

export function decodeStatements(body: string): Statement[] {
  const parsed: unknown = JSON.parse(body);
  if (!Array.isArray(parsed)) throw new Error("log body is not an array");
  return parsed.map((entry: unknown, i) => {
    if (!Array.isArray(entry) || entry.length !== 2) throw new Error(`log entry ${i} is malformed`);
    const [sql, params] = entry as [unknown, unknown];
    if (typeof sql !== "string" || !Array.isArray(params) || !params.every(isSqlValue)) {
      throw new Error(`log entry ${i} is malformed`);
    }
    return { sql, params };
  });
}

export function decodeRecord(row: LogRow): LogRecord {
  return { lsn: row.lsn, term: row.term, ts: row.ts, statements: decodeStatements(row.body) };
}

/** Size in bytes of a stored body (UTF-8), for lag in bytes and batch limits. */
export function bodyBytes(body: string): number {
  return new TextEncoder().encode(body).length;
}

/** Records must be consecutive and increasing to be applied as one batch. */
export function isConsecutive(records: readonly LogRecord[]): boolean {
  for (let i = 1; i < records.length; i++) {
    const prev = records[i - 1];
    const cur = records[i];
    if (prev === undefined || cur === undefined || cur.lsn !== prev.lsn + 1) return false;
  }
  return true;
}
