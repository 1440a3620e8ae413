/**
 * What crosses the front door -> master boundary for backups
 * (docs/operations.md, "Backups and restore"): an export's plan and its pages
 * of row images, and one batch of an import with its answer. Both sides
 * import these types from here.
 */
import type { Fts5Setting } from "./protocol";
import type { Exact } from "./sql-value";

/**
 * The idempotency key of an import's batch `n`; a batch that goes in parts
 * adds `.0`, `.1`, ... (again for parts of parts).
 */
export function importBatchKey(importId: string, n: number): string {
  return `import:${importId}:${n}`;
}

/**
 * Whether a saved result's key is an import's first batch or one of its
 * parts: that result is kept however old it gets (NodeStore.saveResult),
 * since every later batch of the import asks for it (`startedWith`) and an
 * import may run longer than idempotency_retention_ms.
 */
export function isImportFirstBatch(key: string): boolean {
  return /^import:.+:0(\.[0-9]+)*$/.test(key);
}

/** One table of an export, in the order the dump loads them. */
export interface ExportTable {
  name: string;
  /** Its CREATE statement as SQLite stored it. */
  sql: string;
  /** The columns of its row images, as SQL: the rowid's expression first for rowid tables. */
  columns: string[];
  /** How many rows the snapshot holds. */
  rows: number;
  /** Where its images are in the snapshot (SnapshotSource.chunk's table index). */
  index: number;
  /**
   * UNIQUE indexes a foreign key uses as its parent key: created right after the
   * table, since SQLite refuses writes to the child table until they exist.
   */
  indexes: string[];
  /** An fts5 table's settings (rank, pgsz, ...), set before its rows go in. */
  settings: Fts5Setting[];
}

export interface ExportPlan {
  /** This export's own id: several exports (and a replica's rebuild) may share one snapshot. */
  id: string;
  /** The snapshot's LSN: the dump holds exactly the commits up to it. */
  lsn: number;
  /** Rows in every table together. */
  rows: number;
  /** Each table after the tables its foreign keys name (a cycle keeps SQLite's order). */
  tables: ExportTable[];
  /** sqlite_sequence's rows, seq as a cell. */
  sequence: { name: string; seq: string }[];
  /** Indexes, views and triggers, as the user wrote them: created after the rows. */
  after: { type: string; name: string; sql: string }[];
}

/** Row images of one table, in key order, and the position to ask for the next page after. */
export interface ExportPage {
  images: string[];
  last: number;
}

/**
 * One step of an import batch: a statement through the guard (`statements`:
 * how many statements of the dump it stands for, several INSERTs made one),
 * or a write of sqlite_sequence, which the guard refuses to clients and the
 * import alone may make.
 */
export type ImportItem =
  | { kind: "sql"; sql: string; params: Exact[] }
  | { kind: "sequence-reset" }
  | { kind: "sequence"; name: string; seq: bigint };

export interface ImportBatchRequest {
  cluster: string;
  /** The batch's idempotency key and its content's hash: a retry is answered, never run twice. */
  key: string;
  requestHash: string;
  /** The import's first batch: refused unless the cluster holds no user object. */
  first: boolean;
  /**
   * Every later batch: the key of the import's first batch. Refused unless
   * that batch's result is on the cluster, so that an import whose cluster was
   * deleted and created anew meanwhile does not go on into the new one.
   */
  startedWith?: string;
  items: ImportItem[];
  /**
   * Items that are row INSERTs of the dump, and how many rows each inserts: a
   * row SQLite refuses for a missing parent row is handed back (`held`)
   * rather than failing the batch.
   */
  holdable: { item: number; rows: number }[];
  /** The rows held must go in now, foreign keys checked at the commit (core/held-rows.ts). */
  resolve: boolean;
}

export interface ImportBatchResponse {
  /** The batch's commit; null when it wrote nothing. */
  lsn: number | null;
  /** Rows held back (a holdable item, its row), in the order they ran: to send with a later batch. */
  held?: { item: number; row: number }[];
  replayed?: true;
}
