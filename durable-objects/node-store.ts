/**
 * A node's internal state, in the synchronous KV API: the log, the saved
 * results (Comdb2's blkseq), tunables, replica states and metadata. KV rows
 * live where no SQL can name them, and they commit in the same transaction as
 * the user's statements: a commit, its log record and its saved result exist
 * together or not at all.
 *
 * Keys: `m:<name>` metadata, `l:<lsn>` log records, `r:<key>` saved results
 * with `ra:<created>:<key>` ordering them by age (one entry for a replica's
 * batch, under its first key), `t:<name>` tunables,
 * `s:<id>` replica states, `d:<table>` where a table's definition last changed.
 */
import { isImportFirstBatch } from "../core/backup-protocol";
import { decodeBody, toRecord } from "../core/log-codec";
import type { AgedResult, LogEntry, LogRecord, SavedResult } from "../core/protocol";
import { asciiLower } from "../core/sql-lexer";
import type { ReplicaState } from "../core/status";
import { type Tunables, tunablesFromStored } from "../core/tunables";
import { deleteText, getMeta, getText, type Head, putText, sortable, textOf } from "./kv-text";

interface LogHead {
  lsn: number;
  term: number;
  ts: number;
  bytes: number;
  /** Bytes of log through this record: a byte position, like a WAL offset. */
  end: number;
}

/**
 * What an age entry (`ra:<created>:<first key>`) holds: the LSN of the one
 * result it ages, or, for a batch saved together, the newest LSN and every key.
 */
type AgeEntry = number | { lsn: number; keys: string[] };

interface ResultHead {
  requestHash: string;
  lsn: number;
  createdAt: number;
}

const logKey = (lsn: number) => `l:${sortable(lsn)}`;

/** Keys of saved results read per page of readResults. */
const RESULTS_PER_PAGE = 512;

/**
 * A KV listing read whole. The listing is a SQLite statement: left unfinished
 * (a loop broken off, a return from inside it) it stays open, and SQLite then
 * drops no table on this node (SQLITE_LOCKED), a master's leftover snapshot
 * shadows at its start included. So every listing is bounded by `limit` or
 * its range, and read to its end.
 */
function listed<T>(
  kv: SyncKvStorage,
  options: Parameters<SyncKvStorage["list"]>[0],
): [string, T][] {
  return [...kv.list<T>(options)];
}

/** Where a definition changed: entry `entry` of record `lsn`. */
export interface DefinitionChange {
  lsn: number;
  entry: number;
}

/** Any table's, for a DDL entry that does not say which (or a name too long for a key). */
const ANY_TABLE = "d:*";
const MAX_NAME_KEY_BYTES = 1_024;

function definitionKey(table: string): string {
  const name = asciiLower(table);
  return new TextEncoder().encode(name).length > MAX_NAME_KEY_BYTES ? ANY_TABLE : `d:${name}`;
}

/** `a` comes before `b` in the log. */
export const isBefore = (a: DefinitionChange, b: DefinitionChange) =>
  a.lsn < b.lsn || (a.lsn === b.lsn && a.entry < b.entry);

const later = (a: DefinitionChange | undefined, b: DefinitionChange | undefined) =>
  a === undefined || (b !== undefined && isBefore(a, b)) ? b : a;
const resultKey = (key: string) => `r:${key}`;
const ageKey = (createdAt: number, key: string) => `ra:${sortable(createdAt)}:${key}`;

export class NodeStore {
  constructor(private readonly kv: SyncKvStorage) {}

  getMeta(key: string): string | null {
    const value = this.kv.get<string>(`m:${key}`);
    return value === undefined ? null : value;
  }

  setMeta(key: string, value: string): void {
    this.kv.put(`m:${key}`, value);
  }

  /** The last LSN written: the newest record (truncation always keeps one), else the truncation point. */
  lastLsn(): number {
    const [newest] = listed<{ meta: LogHead }>(this.kv, { prefix: "l:", reverse: true, limit: 1 });
    if (newest !== undefined) return newest[1].meta.lsn;
    return Number(this.getMeta("truncated_through") ?? 0);
  }

  /** Appends a record; `entries` are its body's, so its schema changes are noted with it. */
  appendLog(
    record: { lsn: number; term: number; ts: number; end: number },
    body: string,
    bytes: number,
    entries: readonly LogEntry[],
  ): void {
    // The head names its fields: a replica passes the whole record, whose
    // entries and result are already the body's, and a spread stored them twice.
    const head: LogHead = {
      lsn: record.lsn,
      term: record.term,
      ts: record.ts,
      bytes,
      end: record.end,
    };
    putText<LogHead>(this.kv, logKey(record.lsn), head, body);
    entries.forEach((entry, index) => {
      if (entry.kind !== "ddl") return;
      const keys = entry.tables === undefined ? [ANY_TABLE] : entry.tables.map(definitionKey);
      const at: DefinitionChange = { lsn: record.lsn, entry: index };
      for (const key of new Set(keys)) this.kv.put(key, at);
    });
  }

  /**
   * The last log entry that created, altered or dropped `table` on this node,
   * or undefined when none has since its log began: a row written before it
   * may have had other columns.
   */
  definitionChangedAt(table: string): DefinitionChange | undefined {
    const mine = this.kv.get<DefinitionChange>(definitionKey(table));
    return later(mine, this.kv.get<DefinitionChange>(ANY_TABLE));
  }

  /** Byte position of the log after `lsn` (0 before the first record, or once truncated). */
  endOffsetAt(lsn: number): number {
    if (lsn <= 0) return 0;
    return getMeta<LogHead>(this.kv, logKey(lsn))?.end ?? 0;
  }

  /** Records from `fromLsn` on, at most `maxRecords` and about `maxBytes` (at least one). */
  readLog(fromLsn: number, maxRecords: number, maxBytes: number): LogRecord[] {
    const out: LogRecord[] = [];
    let bytes = 0;
    for (const [key, head] of listed<Head<LogHead>>(this.kv, {
      start: logKey(fromLsn),
      prefix: "l:",
      limit: maxRecords,
    })) {
      if (out.length > 0 && bytes + head.meta.bytes > maxBytes) break;
      // The listing brought the head: only a long body's parts are read.
      const stored = textOf(this.kv, key, head);
      bytes += head.meta.bytes;
      out.push(toRecord(stored.meta, decodeBody(stored.text)));
    }
    return out;
  }

  /** Deletes records after `afterLsn` through `lsn`; returns how many went. */
  deleteLog(afterLsn: number, lsn: number): number {
    let deleted = 0;
    for (let at = afterLsn + 1; at <= lsn; at++) {
      deleteText(this.kv, logKey(at));
      deleted++;
    }
    return deleted;
  }

  /**
   * Truncates the log after `afterLsn` through `through`, keeping the byte
   * position of the truncation point (within the caller's transaction).
   */
  truncateLog(afterLsn: number, through: number): void {
    this.setMeta("truncated_term", String(this.termAt(through)));
    this.setMeta("truncated_offset", String(this.endOffsetAt(through)));
    this.deleteLog(afterLsn, through);
    this.setMeta("truncated_through", String(through));
  }

  /** The log is empty and starts after `lsn`, at byte position `offset` (a snapshot installed). */
  restartLog(lsn: number, offset: number, term: number): void {
    const keys = [...this.kv.list({ prefix: "l:" })].map(([key]) => key);
    for (const key of keys) deleteText(this.kv, key);
    // The snapshot's schema is where the new log begins: no record in it is older.
    for (const [key] of [...this.kv.list({ prefix: "d:" })]) this.kv.delete(key);
    this.setMeta("truncated_term", String(term));
    this.setMeta("truncated_offset", String(offset));
    this.setMeta("truncated_through", String(lsn));
  }

  /** The term of record `lsn` (kept, or the truncation point's), 0 before any. */
  termAt(lsn: number): number {
    if (lsn <= 0) return 0;
    const head = getMeta<LogHead>(this.kv, logKey(lsn));
    if (head !== undefined) return head.term;
    return lsn === this.truncatedThrough() ? Number(this.getMeta("truncated_term") ?? 0) : 0;
  }

  /** The term of the newest record: with lastLsn, how up to date this log is (core/terms.ts). */
  lastTerm(): number {
    return this.termAt(this.lastLsn());
  }

  /** The first LSN the log still holds a record of (one past the truncation point). */
  truncatedThrough(): number {
    return Number(this.getMeta("truncated_through") ?? 0);
  }

  findResult(key: string): SavedResult | null {
    const stored = getText<ResultHead>(this.kv, resultKey(key));
    if (stored === undefined) return null;
    return {
      key,
      requestHash: stored.meta.requestHash,
      lsn: stored.meta.lsn,
      response: stored.text,
    };
  }

  /** Whether a result is saved under any key that starts with `prefix` (the parts of an import batch). */
  hasResultUnder(prefix: string): boolean {
    return listed(this.kv, { prefix: resultKey(prefix), limit: 1 }).length > 0;
  }

  saveResult(result: SavedResult, createdAt: number): void {
    this.saveResults([{ result, createdAt }]);
  }

  /**
   * Saves the results of one batch of records with one age entry for them all
   * (a replica's batch: one KV write instead of one per record), under the
   * newest creation time and LSN among them, so none is pruned sooner than it
   * would be on its own.
   */
  saveResults(saved: readonly { result: SavedResult; createdAt: number }[]): void {
    const aged: string[] = [];
    let newestAt = 0;
    let newestLsn = 0;
    for (const { result, createdAt } of saved) {
      const head: ResultHead = { requestHash: result.requestHash, lsn: result.lsn, createdAt };
      putText(this.kv, resultKey(result.key), head, result.response);
      // Without an age entry, pruning never finds it: an import's first batch is kept.
      if (isImportFirstBatch(result.key)) continue;
      aged.push(result.key);
      newestAt = Math.max(newestAt, createdAt);
      newestLsn = Math.max(newestLsn, result.lsn);
    }
    const first = aged[0];
    if (first === undefined) return;
    const entry: AgeEntry = aged.length === 1 ? newestLsn : { lsn: newestLsn, keys: aged };
    this.kv.put(ageKey(newestAt, first), entry);
  }

  /**
   * Deletes saved results created before `before` whose commit is at or below
   * `answeredThrough` (answered: a retry can no longer find it waiting), at
   * most about `limit` (a batch's entry goes whole); returns how many went.
   */
  pruneResults(before: number, answeredThrough: number, limit = 5000): number {
    let pruned = 0;
    for (const [key, entry] of listed<AgeEntry>(this.kv, {
      prefix: "ra:",
      end: `ra:${sortable(before)}`,
      limit,
    })) {
      if (pruned >= limit) break;
      const lsn = typeof entry === "number" ? entry : entry.lsn;
      if (lsn > answeredThrough) continue;
      const names = typeof entry === "number" ? [key.slice(key.indexOf(":", 3) + 1)] : entry.keys;
      for (const name of names) {
        // A key used again once its result was pruned holds a later commit's
        // result, which its own (younger) age entry prunes: a replica indexing
        // its log saves both commits' entries.
        const head = getMeta<ResultHead>(this.kv, resultKey(name));
        if (head !== undefined && head.lsn <= lsn) deleteText(this.kv, resultKey(name));
      }
      this.kv.delete(key);
      pruned += names.length;
    }
    return pruned;
  }

  /**
   * Saved results in key order after `afterKey`, about `maxBytes` of responses
   * (at least one), those of commits at or below `throughLsn`: a snapshot's.
   */
  readResults(
    afterKey: string | null,
    maxBytes: number,
    throughLsn: number,
  ): { results: AgedResult[]; next: string | null } {
    const results: AgedResult[] = [];
    let bytes = 0;
    let last = afterKey;
    const start = afterKey === null ? "r:" : `${resultKey(afterKey)}\0`;
    const page = listed<Head<ResultHead>>(this.kv, {
      prefix: "r:",
      start,
      limit: RESULTS_PER_PAGE,
    });
    for (const [key, head] of page) {
      if (bytes >= maxBytes) return { results, next: last };
      last = key.slice(2);
      if (head.meta.lsn > throughLsn) continue;
      const stored = textOf(this.kv, key, head);
      const { requestHash, lsn, createdAt } = stored.meta;
      results.push({ key: last, requestHash, lsn, response: stored.text, createdAt });
      bytes += stored.text.length + last.length;
    }
    return { results, next: page.length < RESULTS_PER_PAGE ? null : last };
  }

  /** Drops every saved result (a replica rebuilt from a snapshot takes the snapshot's). */
  clearResults(): void {
    const results = [...this.kv.list({ prefix: "r:" })].map(([key]) => key);
    for (const key of results) deleteText(this.kv, key);
    const ages = [...this.kv.list({ prefix: "ra:" })].map(([key]) => key);
    for (const key of ages) this.kv.delete(key);
  }

  loadTunables(): Tunables {
    const rows: { name: string; value: string }[] = [];
    for (const [key, value] of this.kv.list<string>({ prefix: "t:" })) {
      rows.push({ name: key.slice(2), value });
    }
    return tunablesFromStored(rows);
  }

  /** Tunables as stored (name -> JSON text): what a new master takes over. */
  storedTunables(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [key, value] of this.kv.list<string>({ prefix: "t:" })) out[key.slice(2)] = value;
    return out;
  }

  saveTunables(values: Partial<Record<string, unknown>>): void {
    for (const [name, value] of Object.entries(values))
      this.kv.put(`t:${name}`, JSON.stringify(value));
  }

  loadReplicaStates(): Map<string, { state: ReplicaState; reason: string | null }> {
    const out: [string, { state: ReplicaState; reason: string | null }][] = [];
    for (const [key, value] of this.kv.list<{ state: string; reason: string | null }>({
      prefix: "s:",
    })) {
      const state: ReplicaState = value.state === "coherent" ? "coherent" : "incoherent";
      out.push([key.slice(2), { state, reason: value.reason }]);
    }
    const order = (id: string) => Number(id.replace(/\D/g, "")) || 0;
    out.sort(([a], [b]) => order(a) - order(b) || (a < b ? -1 : 1));
    return new Map(out);
  }

  deleteReplica(id: string): void {
    this.kv.delete(`s:${id}`);
  }

  saveReplicaState(id: string, state: ReplicaState, reason: string | null): void {
    this.kv.put(`s:${id}`, { state: state === "coherent" ? "coherent" : "incoherent", reason });
  }
}
