/**
 * The master's internal tables, behind small synchronous methods. Every write
 * of a commit (user statements, log append, saved result) happens inside the
 * caller's one `transactionSync`.
 */
import { decodeRecord } from "../core/log-codec";
import type { LogRecord, ReplicaState } from "../core/protocol";
import { type Tunables, tunablesFromStored } from "../core/tunables";

export interface SavedResult {
  key: string;
  requestHash: string;
  lsn: number;
  response: string;
}

export class MasterStore {
  constructor(private readonly sql: SqlStorage) {}

  getMeta(key: string): string | null {
    const rows = this.sql
      .exec<{ value: string }>("SELECT value FROM _repl_meta WHERE key = ?", key)
      .toArray();
    return rows[0]?.value ?? null;
  }

  setMeta(key: string, value: string): void {
    this.sql.exec("INSERT OR REPLACE INTO _repl_meta (key, value) VALUES (?, ?)", key, value);
  }

  lastLsn(): number {
    const row = this.sql
      .exec<{ lsn: number | null }>("SELECT MAX(lsn) AS lsn FROM _repl_log")
      .one();
    return row.lsn ?? Number(this.getMeta("truncated_through") ?? 0);
  }

  appendLog(
    record: { lsn: number; term: number; ts: number },
    body: string,
    bytes: number,
    endOffset: number,
  ): void {
    this.sql.exec(
      "INSERT INTO _repl_log (lsn, term, ts, body, bytes, end_offset) VALUES (?, ?, ?, ?, ?, ?)",
      record.lsn,
      record.term,
      record.ts,
      body,
      bytes,
      endOffset,
    );
  }

  /** Byte position of the log after `lsn` (0 before the first record). */
  endOffsetAt(lsn: number): number {
    if (lsn <= 0) return 0;
    const rows = this.sql
      .exec<{ end_offset: number }>("SELECT end_offset FROM _repl_log WHERE lsn = ?", lsn)
      .toArray();
    return rows[0]?.end_offset ?? 0;
  }

  /** Records from `fromLsn` on, at most `maxRecords` and about `maxBytes` (at least one). */
  readLog(fromLsn: number, maxRecords: number, maxBytes: number): LogRecord[] {
    const out: LogRecord[] = [];
    let bytes = 0;
    for (const row of this.sql.exec<{
      lsn: number;
      term: number;
      ts: number;
      body: string;
      bytes: number;
    }>(
      "SELECT lsn, term, ts, body, bytes FROM _repl_log WHERE lsn >= ? ORDER BY lsn LIMIT ?",
      fromLsn,
      maxRecords,
    )) {
      if (out.length > 0 && bytes + row.bytes > maxBytes) break;
      bytes += row.bytes;
      out.push(decodeRecord(row));
    }
    return out;
  }

  deleteLogThrough(lsn: number): void {
    this.sql.exec("DELETE FROM _repl_log WHERE lsn <= ?", lsn);
  }

  logStats(): { rows: number; bytes: number } {
    const row = this.sql
      .exec<{ rows: number; bytes: number | null }>(
        "SELECT COUNT(*) AS rows, SUM(bytes) AS bytes FROM _repl_log",
      )
      .one();
    return { rows: row.rows, bytes: row.bytes ?? 0 };
  }

  findResult(key: string): SavedResult | null {
    const rows = this.sql
      .exec<{ key: string; request_hash: string; lsn: number; response: string }>(
        "SELECT key, request_hash, lsn, response FROM _repl_results WHERE key = ?",
        key,
      )
      .toArray();
    const row = rows[0];
    if (row === undefined) return null;
    return { key: row.key, requestHash: row.request_hash, lsn: row.lsn, response: row.response };
  }

  saveResult(result: SavedResult, createdAt: number): void {
    this.sql.exec(
      "INSERT INTO _repl_results (key, request_hash, lsn, response, created_at) VALUES (?, ?, ?, ?, ?)",
      result.key,
      result.requestHash,
      result.lsn,
      result.response,
      createdAt,
    );
  }

  /** Deletes saved results older than `before`; returns how many went. */
  pruneResults(before: number): number {
    return this.sql.exec("DELETE FROM _repl_results WHERE created_at < ?", before).rowsWritten;
  }

  loadTunables(): Tunables {
    return tunablesFromStored(
      this.sql.exec<{ name: string; value: string }>("SELECT name, value FROM _repl_tunables"),
    );
  }

  saveTunables(values: Partial<Record<string, unknown>>): void {
    for (const [name, value] of Object.entries(values)) {
      this.sql.exec(
        "INSERT OR REPLACE INTO _repl_tunables (name, value) VALUES (?, ?)",
        name,
        JSON.stringify(value),
      );
    }
  }

  loadReplicaStates(): Map<string, { state: ReplicaState; reason: string | null }> {
    const out = new Map<string, { state: ReplicaState; reason: string | null }>();
    for (const row of this.sql.exec<{ id: string; state: string; reason: string | null }>(
      "SELECT id, state, reason FROM _repl_replicas ORDER BY CAST(substr(id, 9) AS INTEGER), id",
    )) {
      const state: ReplicaState = row.state === "coherent" ? "coherent" : "incoherent";
      out.set(row.id, { state, reason: row.reason });
    }
    return out;
  }

  deleteReplica(id: string): void {
    this.sql.exec("DELETE FROM _repl_replicas WHERE id = ?", id);
  }

  saveReplicaState(id: string, state: ReplicaState, reason: string | null): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO _repl_replicas (id, state, reason) VALUES (?, ?, ?)",
      id,
      state === "coherent" ? "coherent" : "incoherent",
      reason,
    );
  }
}
