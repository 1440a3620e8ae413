/**
 * Applying the master's log entries on a replica, inside the batch's
 * transaction, and checking that what the replica did is what the master did:
 * the replica captures its own changes exactly as the master captured its
 * (row-capture.ts), and their digests must agree entry by entry.
 */
import type { LogEntry, LogRecord } from "../../core/protocol";
import { applyChanges } from "../../core/row-apply";
import { type Change, effectsHash, statementEffects, UNCAPTURED } from "../../core/row-capture";
import { tokenize } from "../../core/sql-lexer";
import { decodeBindable } from "../../core/sql-params";
import { cellSql, decodeCell, SqlBuilder } from "../../core/sql-value";
import { APPLYING_TABLE } from "../../core/trigger-guard";
import { countThenTake, dropCaptureTriggers, syncCaptureTriggers, takeChanges } from "./capture";
import { run } from "./run";
import type { SqlNode } from "./schema";

/** The replica's changes differ from the master's: it stops applying and is rebuilt. */
export class DivergedError extends Error {
  constructor(
    readonly lsn: number,
    readonly entry: number,
    readonly detail: string,
  ) {
    super(`diverged at LSN ${lsn}, entry ${entry}: ${detail}`);
  }
}

/** A foreign key failed mid-batch: applied in capture order, a step between may break one. */
export function isForeignKeyError(error: unknown): boolean {
  return error instanceof Error && /FOREIGN KEY constraint failed/.test(error.message);
}

/**
 * What a failed batch means for the replica. A digest that differs is a
 * divergence; so is SQLite refusing to apply what the master committed (a
 * constraint, a limit): on the master's rows it would have applied, so the
 * replica's rows or its apply are not the master's, and only a snapshot mends
 * either. Anything else (the platform resetting the object, an overloaded
 * storage) may pass, and the batch is sent again: null.
 */
export function asDivergence(
  failure: unknown,
  records: readonly LogRecord[],
): DivergedError | null {
  if (failure instanceof DivergedError) return failure;
  // workerd ends SQLite's errors with its code, and constraint errors with the
  // extended code after it: `...: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_CHECK)`.
  const sqlite = /: SQLITE_[A-Z_]+( \(extended: SQLITE_[A-Z_]+\))?$/;
  if (!(failure instanceof Error) || !sqlite.test(failure.message)) return null;
  const lsn = records[0]?.lsn ?? 0;
  return new DivergedError(lsn, 0, `the batch from this LSN failed to apply: ${failure.message}`);
}

/**
 * Applies one entry's rows. `checked`: the caller compares digests of what it
 * captured; otherwise every UPDATE and DELETE must find its row, which is all
 * the digest would tell for tables no foreign key joins (nothing else moves
 * there: user triggers are off, and every image is the master's).
 */
function applyRows(
  node: SqlNode,
  changes: readonly Change[],
  lsn: number,
  index: number,
  checked: boolean,
): void {
  let start = 0;
  while (start < changes.length) {
    const table = changes[start]?.t ?? "";
    let end = start;
    while (end < changes.length && changes[end]?.t === table) end++;
    const info = node.schema.table(table);
    if (info === undefined) {
      throw new DivergedError(lsn, index, `no table ${table} for its changes`);
    }
    for (const statement of applyChanges(info, changes.slice(start, end))) {
      const cursor = node.sql.exec(statement.sql, ...statement.params);
      for (const _ of cursor.raw()) {
        // no rows: read to the end so the statement completes
      }
      if (!checked && statement.mustHit === true && cursor.rowsWritten === 0) {
        throw new DivergedError(lsn, index, `a row of ${table} the master changed is missing`);
      }
    }
    start = end;
  }
}

function firstWord(sql: string): string | undefined {
  const first = tokenize(sql)[0];
  return first?.type === "word" ? first.value.toUpperCase() : undefined;
}

/**
 * What a replica's trigger guard flag holds while it applies an entry:
 * nothing (every trigger fires: `sql` entries, run as the master ran them),
 * 1 (user triggers off: rows checked by their captured digest), or UNCAPTURED
 * (capture off too: rows checked by `mustHit`).
 */
type FlagState = 0 | 1 | typeof UNCAPTURED;

/**
 * Applies log records on a replica within the caller's transaction. Between
 * batches the flag holds UNCAPTURED (ensureReplicaFlag, and `finish` before
 * every commit): user triggers never fire, since the master's rows hold their
 * effects, and nothing is captured. Every batch starts from that state and the
 * flag is only changed inside the batch's transaction, so a batch that fails
 * rolls it back to that state too.
 */
export class BatchApplier {
  private state: FlagState = UNCAPTURED;

  constructor(private readonly node: SqlNode) {}

  private flag(next: FlagState): void {
    if (next === this.state) return;
    const sql = this.node.sql;
    if (next === 0) run(sql, `DELETE FROM ${APPLYING_TABLE}`);
    else if (this.state === 0) run(sql, `INSERT INTO ${APPLYING_TABLE} (x) VALUES (${next})`);
    else run(sql, `UPDATE ${APPLYING_TABLE} SET x = ${next}`);
    this.state = next;
  }

  /** Applies one record's entries and AUTOINCREMENT counters; throws DivergedError. */
  apply(record: LogRecord): void {
    record.entries.forEach((entry, i) => {
      this.applyEntry(entry, record.lsn, i);
    });
    if (record.sequence !== undefined) restoreSequence(this.node.sql, record.sequence);
  }

  private applyEntry(entry: LogEntry, lsn: number, index: number): void {
    const { sql, schema } = this.node;
    if (entry.kind === "rows" && !schema.touchesForeignKeys(entry.changes)) {
      this.flag(UNCAPTURED);
      applyRows(this.node, entry.changes, lsn, index, false);
      return;
    }
    let mine: string;
    if (entry.kind === "sql") {
      this.flag(0);
      sql.exec(entry.sql, ...entry.params.map(decodeBindable)).toArray();
      const taken = countThenTake(sql);
      const rowid = entry.rowid === true ? taken.counts.lastRowId : null;
      mine = statementEffects(taken.changes, taken.counts.changes, rowid);
    } else {
      this.flag(1);
      // What a DROP TABLE captured it deleted before the table went (its rows,
      // and its children's through foreign-key actions): applied first, while
      // the parent a child's foreign key names still exists. Other DDL's rows
      // (CREATE TABLE ... AS) go into what it made.
      const before = entry.kind === "ddl" && firstWord(entry.sql) === "DROP";
      if (before) applyRows(this.node, entry.changes, lsn, index, true);
      if (entry.kind === "ddl") {
        if (firstWord(entry.sql) === "ALTER") dropCaptureTriggers(sql, schema);
        sql.exec(entry.sql).toArray();
        schema.invalidate();
        syncCaptureTriggers(sql, schema);
      }
      if (!before) applyRows(this.node, entry.changes, lsn, index, true);
      mine = effectsHash(takeChanges(sql));
    }
    if (entry.effects === undefined) {
      // The master saw no foreign key joining these rows' tables; this replica does.
      throw new DivergedError(
        lsn,
        index,
        "rows the master checked by no digest touch a table a foreign key joins here",
      );
    }
    if (mine !== entry.effects) {
      throw new DivergedError(lsn, index, `effects ${mine}, the master's ${entry.effects}`);
    }
  }

  /** Leaves the flag as it stands between batches. */
  finish(): void {
    this.flag(UNCAPTURED);
  }
}

/** sqlite_sequence as the master had it (AUTOINCREMENT counters), values exact. */
export function restoreSequence(sql: SqlStorage, rows: NonNullable<LogRecord["sequence"]>): void {
  run(sql, "DELETE FROM sqlite_sequence");
  for (const { name, seq } of rows) {
    const value = new SqlBuilder();
    const text = value.value(decodeCell(seq));
    run(sql, `INSERT INTO sqlite_sequence (name, seq) VALUES (?, ${text})`, name, ...value.params);
  }
}

/** sqlite_sequence's rows as cells, or none when no AUTOINCREMENT table exists. */
export function readSequence(node: SqlNode): NonNullable<LogRecord["sequence"]> {
  if (node.schema.objects().every((o) => o.name !== "sqlite_sequence")) return [];
  return node.sql
    .exec<{ name: string; seq: string }>(
      `SELECT name, ${cellSql("seq")} AS seq FROM sqlite_sequence`,
    )
    .toArray();
}

/** A replica's standing state: the flag holds UNCAPTURED, so user triggers and capture stay off. */
export function ensureReplicaFlag(sql: SqlStorage): void {
  run(sql, `DELETE FROM ${APPLYING_TABLE}`);
  run(sql, `INSERT INTO ${APPLYING_TABLE} (x) VALUES (${UNCAPTURED})`);
}

/** A master's standing state: the flag is empty, so capture and user triggers fire. */
export function ensureMasterFlag(sql: SqlStorage): void {
  run(sql, `DELETE FROM ${APPLYING_TABLE}`);
}
