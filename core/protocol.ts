/**
 * Types that cross a boundary: front door -> master, master -> replica,
 * replica -> master. Both sides import them from here and nowhere else.
 */
import type { ApiValue } from "./api-values";
import type { ConnectionCounters } from "./connection-counters";
import type { ErrorBody } from "./errors";
import type { Change } from "./row-capture";
import type { Exact } from "./sql-value";

/** A client statement: SQL text and exact parameter values (core/api-values.ts). */
export interface Statement {
  sql: string;
  params: Exact[];
}

/**
 * What one client statement did, as the log ships it (docs/architecture.md,
 * "Replication"): `rows`, the rows it changed; `ddl`, a schema change and the
 * rows it changed (cascades, CREATE TABLE ... AS rows); `sql`, a write to a
 * virtual table that replicas run themselves. `effects` digests the rows it
 * left behind (effectsHash), which a replica must reproduce exactly; a `rows`
 * entry carries it only when its rows touch a table a foreign key joins, the
 * only rows a replica checks by digest (elsewhere each update and delete must
 * find its row, and every image is the master's).
 */
export type LogEntry =
  | { kind: "rows"; changes: Change[]; effects?: string }
  | {
      kind: "ddl";
      sql: string;
      changes: Change[];
      effects: string;
      /**
       * The tables whose definition it created, changed or dropped, as
       * sqlite_schema names them: a row written before it no longer has their
       * columns. Absent in records older than the field: any table may have.
       */
      tables?: string[];
    }
  | {
      kind: "sql";
      sql: string;
      params: string[];
      effects: string;
      /** The effects digest counts last_insert_rowid() (the statement set it). */
      rowid?: true;
    };

/** One committed write transaction, the unit the log ships. */
export interface LogRecord {
  lsn: number;
  term: number;
  /** Master clock (ms) at commit. */
  ts: number;
  /** Byte position of the log after this record: every node keeps the master's. */
  end: number;
  entries: LogEntry[];
  /** sqlite_sequence after the commit (AUTOINCREMENT counters, seq as a cell), when it wrote it. */
  sequence?: { name: string; seq: string }[];
  /**
   * The saved result of a commit made with an Idempotency-Key: every node keeps
   * it, so a promoted replica answers a retry of a commit the old master made.
   */
  result?: SavedResult;
}

/** Comdb2's blkseq: a commit's idempotency key, its request's hash and its response. */
export interface SavedResult {
  key: string;
  requestHash: string;
  lsn: number;
  response: string;
}

/** A saved result with the time its commit was made: its age goes with it (a snapshot's). */
export interface AgedResult extends SavedResult {
  createdAt?: number;
}

export interface StatementResult {
  rowsWritten: number;
  lastRowId: ApiValue;
  /** Present when the statement returned rows (RETURNING, or a query inside the exec). */
  rows?: Record<string, ApiValue>[] | ApiValue[][];
  /** With `"format": "arrays"`: the column names, beside rows as arrays. */
  columns?: string[];
}

/** The body a successful write returns; saved under its Idempotency-Key. */
export interface ExecResponse {
  lsn: number;
  results: StatementResult[];
  bookmark: string;
  replayed?: true;
}

export interface ExecRequest {
  cluster: string;
  statements: Statement[];
  format?: ResultFormat;
  idempotencyKey?: string;
  /** SHA-256 of the request's route and body, to tell a retry from a reuse. */
  requestHash?: string;
  /** Where the request came from: decides how DDL and rows-route errors read. */
  kind: "exec" | "rows";
}

export type Consistency = "strong" | "bookmark" | "any";

/** Rows as objects keyed by column name, or as arrays in select order beside `columns`. */
export type ResultFormat = "objects" | "arrays";

export interface QueryRequest {
  cluster: string;
  sql: string;
  params: Exact[];
  consistency: Consistency;
  minLsn: number;
  format?: ResultFormat;
  /** A libSQL stream's connection counters, which its SQL reads; fresh ones when absent. */
  counters?: ConnectionCounters;
}

export type QueryResponse =
  | { rows: Record<string, ApiValue>[]; servedBy: string; appliedLsn: number }
  | { columns: string[]; rows: ApiValue[][]; servedBy: string; appliedLsn: number };

/** A replica answers `redirect` when it may not serve the read. */
export type ReplicaQueryOutcome =
  | { kind: "rows"; response: QueryResponse }
  | { kind: "redirect"; reason: string }
  | { kind: "error"; error: ErrorBody };

/** Settings the master pushes to its replicas with every message. */
export interface ReplicaSettings {
  ackDelayMs: number;
  applyDelayMs: number;
  /** lease_guard_ms: a replica stops serving strong reads this long before its lease ends. */
  leaseGuardMs: number;
  /** The longest a strong read on a replica waits for the commit point before it is redirected. */
  strongReadWaitMs: number;
  /** idempotency_retention_ms: how long every node keeps a commit's saved result. */
  idempotencyRetentionMs: number;
  /** master_failover_ms (0 when off or without durable_lsns): silence after which replicas promote one of them. */
  masterFailoverMs: number;
}

/**
 * Replica -> master: a strong read found no lease here (the master slept, or
 * the lease ran out between messages); it asks for one on demand.
 */
export interface LeaseRequest {
  cluster: string;
  replicaId: string;
  /** The term the replica knows: a lease of any other term is refused. */
  term: number;
}

/**
 * Master -> replica: a lease until `leaseUntil` (master clock; 0: refused,
 * `refused` says why), for a replica that has applied through `throughLsn`,
 * with the commit point and the settings an append would carry.
 */
export interface LeaseGrant {
  term: number;
  leaseUntil: number;
  throughLsn: number;
  commitPoint: number;
  settings: ReplicaSettings;
  refused?: string;
}

/** Master -> replica: records in LSN order (possibly none: a heartbeat). */
export interface AppendRequest {
  cluster: string;
  replicaId: string;
  /** The member that sends it (the master): acks and pulls go back to it. */
  from: string;
  /** The sender's term, and the LSN of the term's first record (core/terms.ts). */
  term: number;
  termStartLsn: number;
  /** Master clock when sent; echoed in the ack. */
  sentAt: number;
  masterLsn: number;
  /** Master-clock instant until which the replica may serve strong reads; 0 = no lease. */
  leaseUntil: number;
  /**
   * The commit point when sent (core/commit-point.ts): every LSN at or below it
   * is on every node that may serve a strong read. A strong read answers only
   * once this has reached the LSN it read at.
   */
  commitPoint: number;
  settings: ReplicaSettings;
  records: LogRecord[];
  /**
   * The term of the master's record just before the first one sent (0 when it
   * is truncated): a replica whose own record there has another term does not
   * hold the master's log (Raft's log matching), and is rebuilt.
   */
  prevTerm?: number;
  /** The master's log holds no record at or below this: the replica's need not either. */
  truncatedThrough: number;
  /**
   * The replica is too far behind for live records (logput_window_bytes): it
   * should pull the log in order from the master until it is caught up.
   */
  pull: boolean;
  /**
   * Highest LSN the master has taken an ack for from this replica. A deferred
   * ack past it may have been lost (a reply that never arrived, a master that
   * restarted): the replica acks it again.
   */
  ackedLsn: number;
  /**
   * An empty message sent to fetch a held ack (debug_ack_delay_ms): the replica
   * answers after this many milliseconds, when the ack is due.
   */
  holdMs?: number;
}

/** One fts5 setting: `value` is quote() of what `<table>_config` holds for `key`. */
export interface Fts5Setting {
  table: string;
  key: string;
  value: string;
}

/** A snapshot the master took (SnapshotSource): what a rebuilt replica installs. */
export interface SnapshotPlan {
  id: string;
  lsn: number;
  /** Byte position of the master's log after `lsn`, and the term of record `lsn`: the installed log starts there. */
  logEnd: number;
  lastTerm: number;
  /**
   * Tables in install order; `shadow` holds their images. For exports, as the
   * schema was at `lsn`: `columns`, the images' columns as SQL (schema-info.ts
   * imageSqlColumns); `parents`, the tables its foreign keys name; `parentKeys`,
   * its UNIQUE indexes that some foreign key needs as its parent key.
   */
  tables: {
    name: string;
    shadow: string;
    columns: string[];
    parents: string[];
    parentKeys: string[];
  }[];
  /** User objects to create, tables first, then indexes, views and triggers. */
  objects: { type: string; name: string; sql: string }[];
  /** sqlite_sequence rows (seq as a cell). */
  sequence: { name: string; seq: string }[];
  /** Settings of the fts5 tables (sqlite/fts5-settings.ts). */
  fts5Settings: Fts5Setting[];
}

/**
 * Master -> replica: one step of rebuilding it from a snapshot. `begin` answers
 * with how far the replica already staged each table of this snapshot (a
 * stream that failed resumes there), `rows` stages images, `end` installs it
 * all in one transaction.
 */
export type SnapshotMessage =
  | { phase: "begin"; id: string; lsn: number; tables: number; term: number }
  | { phase: "rows"; id: string; table: number; rows: { pos: number; img: string }[] }
  | { phase: "results"; id: string; results: AgedResult[] }
  | {
      phase: "end";
      id: string;
      lsn: number;
      logEnd: number;
      lastTerm: number;
      /** The sending master's term: the installed state is that master's own. */
      term: number;
      tables: { name: string }[];
      objects: SnapshotPlan["objects"];
      sequence: SnapshotPlan["sequence"];
      fts5Settings: SnapshotPlan["fts5Settings"];
    };

export interface SnapshotReply {
  appliedLsn: number;
  /** For `begin`: the last staged position per table (0: none). */
  staged?: number[];
}

/** Replica -> master: a deferred ack (debug_ack_delay_ms). */
export interface AckRequest {
  cluster: string;
  replicaId: string;
  /**
   * The term of the message whose apply this acks: a master takes acks of its
   * own term only (an ack held across a promotion speaks of an older log).
   */
  term: number;
  appliedLsn: number;
  echoSentAt: number;
  ackDelayedMs: number;
}

/** Replica -> master: the next records from `fromLsn`, in order. */
export interface PullRequest {
  cluster: string;
  replicaId: string;
  fromLsn: number;
  maxRecords: number;
}

export interface PullResponse {
  records: LogRecord[];
  /** The term of the master's record just before the first one (log matching, as in AppendRequest). */
  prevTerm?: number;
  masterLsn: number;
  /** The records it needs are truncated: the master rebuilds it from a snapshot instead. */
  snapshot?: true;
  /** The records reach the master's LSN: live records resume after them. */
  caughtUp: boolean;
}

export interface AppendResponse {
  /**
   * With debug_ack_delay_ms set, the reply only frees the relay's window: the
   * ack itself comes later as a separate replica -> master call (`AckRequest`).
   */
  ackDeferred?: boolean;
  /** A deferred ack that fell due, riding on this reply. */
  dueAck?: AckRequest;
  /** Set when the replica refused the message (stopped by the fault hook). */
  refused?: string;
  /** The replica knows this higher term: the sender is no longer master (core/terms.ts). */
  staleTerm?: number;
  /** The replica is (still) rebuilding from a snapshot and applies nothing. */
  rebuilding?: true;
  /**
   * The replica computed other effects than the master for the record at
   * `lsn`: it stopped applying before it and must be rebuilt from a snapshot.
   */
  diverged?: { lsn: number; detail: string };
  /** Highest LSN applied, which covers every earlier LSN. */
  appliedLsn: number;
  /** True when the batch started past appliedLsn + 1: resend from appliedLsn + 1. */
  gap: boolean;
  /** The request's sentAt, echoed. */
  echoSentAt: number;
  skipped: number;
  applied: number;
  /** How long the replica really held this ack (debug_ack_delay_ms, measured). */
  ackDelayedMs: number;
  /** Its own log is truncated through this LSN (after this message's step). */
  logTruncatedThrough?: number;
}

export interface TableChecksum {
  rows: number;
  checksum: string;
}

export interface NodeChecksums {
  node: string;
  appliedLsn: number;
  schema: string;
  tables: Record<string, TableChecksum>;
}

export const REPLICA_ID_PREFIX = "replica-";

/**
 * The reason the master's fault route resets it with. The reset throws this
 * into the crash call itself, so the front door knows the crash took effect.
 */
export const MASTER_CRASH_REASON = "master crashed through the fault route";

/** Whether a call failed because the master's fault route reset it (the crash took effect). */
export function isMasterCrash(error: unknown): boolean {
  return error instanceof Error && error.message.includes(MASTER_CRASH_REASON);
}

export function replicaId(index: number): string {
  return `${REPLICA_ID_PREFIX}${index}`;
}

/** Bookmarks are opaque to clients; today they carry the LSN a read must reach. */
export function encodeBookmark(lsn: number): string {
  return `b1.${lsn.toString(36)}`;
}

export function decodeBookmark(bookmark: string): number | null {
  const match = /^b1\.([0-9a-z]{1,12})$/.exec(bookmark);
  if (match?.[1] === undefined) return null;
  const lsn = Number.parseInt(match[1], 36);
  return Number.isSafeInteger(lsn) ? lsn : null;
}
