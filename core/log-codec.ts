/**
 * The log record codec: how a committed transaction is stored and shipped.
 * The body is JSON of strings only (row images and parameters are cells,
 * sql-value.ts), so it keeps every value exact and its size in bytes is known.
 */
import type { LogEntry, LogRecord, SavedResult } from "./protocol";
import type { Change } from "./row-capture";

export interface RecordBody {
  entries: LogEntry[];
  sequence?: LogRecord["sequence"];
  result?: SavedResult;
}

export function encodeBody(body: RecordBody): string {
  return JSON.stringify(body);
}

function malformed(what: string): Error {
  return new Error(`log record is malformed: ${what}`);
}

const isString = (v: unknown): v is string => typeof v === "string";

function checkChange(change: unknown): Change {
  const c = change as Partial<Change>;
  if (
    typeof c !== "object" ||
    c === null ||
    !isString(c.t) ||
    !["I", "U", "D"].includes(c.op ?? "")
  ) {
    throw malformed("a change");
  }
  for (const field of [c.ok, c.nk, c.img]) {
    if (field !== undefined && !isString(field)) throw malformed("a change's images");
  }
  return c as Change;
}

function checkEntry(entry: unknown): LogEntry {
  const e = entry as Record<string, unknown>;
  if (typeof e !== "object" || e === null) throw malformed("an entry");
  // Only a rows entry may go without its digest (protocol.ts).
  if (!isString(e.effects) && !(e.kind === "rows" && e.effects === undefined)) {
    throw malformed("an entry");
  }
  if (e.kind === "rows" || e.kind === "ddl") {
    if (!Array.isArray(e.changes)) throw malformed("an entry's changes");
    e.changes.forEach(checkChange);
    if (e.kind === "ddl" && !isString(e.sql)) throw malformed("a ddl entry");
    if (e.kind === "ddl" && e.tables !== undefined) {
      if (!Array.isArray(e.tables) || !e.tables.every(isString))
        throw malformed("a ddl entry's tables");
    }
    return e as unknown as LogEntry;
  }
  if (
    e.kind === "sql" &&
    isString(e.sql) &&
    Array.isArray(e.params) &&
    e.params.every(isString) &&
    (e.rowid === undefined || e.rowid === true)
  ) {
    return e as unknown as LogEntry;
  }
  throw malformed(`entry kind ${String(e.kind)}`);
}

export function decodeBody(text: string): RecordBody {
  const parsed = JSON.parse(text) as Partial<RecordBody>;
  if (typeof parsed !== "object" || parsed === null || !Array.isArray(parsed.entries)) {
    throw malformed("no entries");
  }
  const body: RecordBody = { entries: parsed.entries.map(checkEntry) };
  if (parsed.sequence !== undefined) {
    if (!Array.isArray(parsed.sequence)) throw malformed("sequence");
    for (const row of parsed.sequence) {
      if (!isString(row?.name) || !isString(row?.seq)) throw malformed("a sequence row");
    }
    body.sequence = parsed.sequence;
  }
  if (parsed.result !== undefined) {
    const r = parsed.result as Partial<SavedResult>;
    if (!isString(r.key) || !isString(r.requestHash) || !isString(r.response)) {
      throw malformed("a saved result");
    }
    if (typeof r.lsn !== "number") throw malformed("a saved result's LSN");
    body.result = parsed.result;
  }
  return body;
}

/** The body a record is stored and measured by. */
export function recordBody(record: LogRecord): RecordBody {
  return {
    entries: record.entries,
    ...(record.sequence ? { sequence: record.sequence } : {}),
    ...(record.result ? { result: record.result } : {}),
  };
}

export function toRecord(
  head: { lsn: number; term: number; ts: number; end: number },
  body: RecordBody,
): LogRecord {
  return {
    lsn: head.lsn,
    term: head.term,
    ts: head.ts,
    end: head.end,
    entries: body.entries,
    ...(body.sequence ? { sequence: body.sequence } : {}),
    ...(body.result ? { result: body.result } : {}),
  };
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
