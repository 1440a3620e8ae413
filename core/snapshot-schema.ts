/**
 * How a snapshot rebuilds a schema: tables first (empty), rows next, then
 * indexes, triggers and views, so no trigger fires while rows are installed
 * and indexes are built once. Pure: it plans from sqlite_master rows.
 */
import { isReservedName } from "./statement-guard";

export type SchemaRow = {
  type: string;
  name: string;
  tbl_name: string;
  sql: string | null;
};

export interface SnapshotTable {
  name: string;
  /** CREATE TABLE statement, as stored in sqlite_master. */
  sql: string;
  /** False for WITHOUT ROWID tables, whose rows are keyed by their primary key. */
  hasRowid: boolean;
}

export interface SchemaPlan {
  tables: SnapshotTable[];
  /** Indexes, triggers and views: created after the rows are in. */
  after: string[];
}

const WITHOUT_ROWID = /\bWITHOUT\s+ROWID\s*[;]?\s*$/i;

export function planSchema(rows: readonly SchemaRow[]): SchemaPlan {
  const tables: SnapshotTable[] = [];
  const after: { order: number; name: string; sql: string }[] = [];
  const order: Record<string, number> = { index: 0, view: 1, trigger: 2 };
  for (const row of rows) {
    if (row.sql === null || isReservedName(row.name, true) || isReservedName(row.tbl_name, true)) {
      continue; // automatic indexes and internal objects
    }
    if (row.type === "table") {
      tables.push({ name: row.name, sql: row.sql, hasRowid: !WITHOUT_ROWID.test(row.sql) });
    } else if (row.type in order) {
      after.push({ order: order[row.type] ?? 3, name: row.name, sql: row.sql });
    }
  }
  tables.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  after.sort((a, b) => a.order - b.order || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { tables, after: after.map((x) => x.sql) };
}

/** Log truncation point: keep `retain` records, never more than `max`, and nothing a replica lacks unless past `max`. */
export function truncationPoint(input: {
  lsn: number;
  minAckedLsn: number;
  retain: number;
  max: number;
  pinnedLsn: number | null;
}): number {
  const wanted = Math.max(
    Math.min(input.minAckedLsn, input.lsn - input.retain),
    input.lsn - input.max,
  );
  const pinned = input.pinnedLsn === null ? wanted : Math.min(wanted, input.pinnedLsn);
  // The last record always stays: the LSN and the log's byte position are read from it.
  return Math.max(0, Math.min(pinned, input.lsn - 1));
}
