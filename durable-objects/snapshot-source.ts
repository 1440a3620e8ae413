/**
 * A consistent snapshot of the master's user tables for rebuilding a replica
 * that is behind the log's truncation point. `begin` copies every user table
 * into a shadow table (`_repl_snap_<n>`) in one synchronous transaction, so the
 * copy is exactly the state at one LSN while writes go on; `chunk` pages rows
 * out of the shadows in rowid order; `release` drops them.
 */
import { type SchemaRow, type SnapshotTable, planSchema } from "../core/snapshot-schema";
import { quoteIdent } from "../core/sql-lexer";

export interface SnapshotBegin {
  lsn: number;
  tables: SnapshotTable[];
  after: string[];
  /** sqlite_sequence rows, for AUTOINCREMENT tables. */
  sequences: { name: string; seq: number }[];
}

export interface SnapshotChunk {
  table: string;
  /** Column names; the first is the rowid for tables that have one. */
  columns: string[];
  rows: unknown[][];
}

const SHADOW_PREFIX = "_repl_snap_";
const ROWID_COLUMN = "_repl_rowid";

export class SnapshotSource {
  private begun: (SnapshotBegin & { shadows: Map<string, string> }) | null = null;
  users = 0;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly currentLsn: () => number,
  ) {}

  get lsn(): number | null {
    return this.begun?.lsn ?? null;
  }

  /** Drops shadows left by a master that stopped mid-snapshot. */
  dropLeftovers(): void {
    const sql = this.storage.sql;
    const names = sql
      .exec<{ name: string }>(
        // Not LIKE '_repl_snap_%': `_` matches any character there, and a client's table
        // named xrepl_snap_1 would be dropped on the master alone.
        "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, ?) = ?",
        SHADOW_PREFIX.length,
        SHADOW_PREFIX,
      )
      .toArray();
    for (const { name } of names) sql.exec(`DROP TABLE ${quoteIdent(name)}`);
  }

  /** Starts (or joins) the snapshot at the current LSN. */
  begin(): SnapshotBegin {
    this.users++;
    if (this.begun !== null) return this.begun;
    const sql = this.storage.sql;
    let snapshot: (SnapshotBegin & { shadows: Map<string, string> }) | null = null;
    this.storage.transactionSync(() => {
      const schema = sql
        .exec<SchemaRow>("SELECT type, name, tbl_name, sql FROM sqlite_master")
        .toArray();
      const plan = planSchema(schema);
      const shadows = new Map<string, string>();
      plan.tables.forEach((table, i) => {
        const shadow = `${SHADOW_PREFIX}${i}`;
        const source = quoteIdent(table.name);
        const select = table.hasRowid
          ? `SELECT rowid AS ${ROWID_COLUMN}, * FROM ${source}`
          : `SELECT * FROM ${source}`;
        sql.exec(`CREATE TABLE ${quoteIdent(shadow)} AS ${select}`);
        shadows.set(table.name, shadow);
      });
      const hasSequence = schema.some((row) => row.name === "sqlite_sequence");
      const sequences = hasSequence
        ? sql.exec<{ name: string; seq: number }>("SELECT name, seq FROM sqlite_sequence").toArray()
        : [];
      snapshot = {
        lsn: this.currentLsn(),
        tables: plan.tables,
        after: plan.after,
        sequences,
        shadows,
      };
    });
    if (snapshot === null) throw new Error("snapshot did not begin");
    this.begun = snapshot;
    return snapshot;
  }

  /** Up to `limit` rows of `table` after shadow position `after`; `next` is the new position. */
  chunk(table: string, after: number, limit: number): SnapshotChunk & { next: number } {
    const shadow = this.begun?.shadows.get(table);
    if (shadow === undefined) throw new Error(`no snapshot of ${table}`);
    const cursor = this.storage.sql.exec(
      `SELECT rowid AS _repl_pos, * FROM ${quoteIdent(shadow)} WHERE rowid > ? ORDER BY rowid LIMIT ?`,
      after,
      limit,
    );
    const columns = cursor.columnNames.filter((c) => c !== "_repl_pos");
    const rows: unknown[][] = [];
    let next = after;
    for (const row of cursor.raw()) {
      next = Number(row[0]);
      rows.push(row.slice(1));
    }
    return { table, columns, rows, next };
  }

  /** A replica is done with the snapshot; the last one out drops the shadows. */
  release(): void {
    this.users = Math.max(0, this.users - 1);
    if (this.users > 0 || this.begun === null) return;
    const shadows = [...this.begun.shadows.values()];
    this.begun = null;
    this.storage.transactionSync(() => {
      for (const shadow of shadows) this.storage.sql.exec(`DROP TABLE ${quoteIdent(shadow)}`);
    });
  }
}

export const SNAPSHOT_ROWID_COLUMN = ROWID_COLUMN;
