/**
 * Applying the master's log entries on a replica, inside the batch's
 * transaction, and checking that what the replica did is what the master did:
 * the replica captures its own changes exactly as the master captured its
 * (row-capture.ts), and their digests must agree entry by entry.
 */
import type { LogEntry, LogRecord } from "../../core/protocol";
import { type Change, effectsHash, statementEffects } from "../../core/row-capture";
import { applyChanges } from "../../core/row-apply";
import { decodeBindable } from "../../core/sql-params";
import { tokenize } from "../../core/sql-lexer";
import { SqlBuilder, cellSql, decodeCell } from "../../core/sql-value";
import { APPLYING_TABLE } from "../../core/trigger-guard";
import { countThenTake, dropCaptureTriggers, syncCaptureTriggers, takeChanges } from "./capture";
import { run } from "./run";
import type { SqlNode } from "./write";

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

function applyRows(node: SqlNode, changes: readonly Change[], lsn: number, index: number): void {
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
      run(node.sql, statement.sql, ...statement.params);
    }
    start = end;
  }
}

function isAlter(sql: string): boolean {
  const first = tokenize(sql)[0];
  return first?.type === "word" && first.value.toUpperCase() === "ALTER";
}

/**
 * Applies log records on a replica within the caller's transaction. A
 * replica keeps the trigger guard's flag set at all times (ensureReplicaFlag):
 * its user triggers never fire, since the master's rows hold their effects.
 * The flag is lifted only around `sql` entries, which replicas run as the
 * master ran them, triggers and all, and set again before the commit.
 */
export class BatchApplier {
  private flagged = true;

  constructor(private readonly node: SqlNode) {}

  private flag(on: boolean): void {
    if (on === this.flagged) return;
    run(
      this.node.sql,
      on ? `INSERT INTO ${APPLYING_TABLE} (x) VALUES (1)` : `DELETE FROM ${APPLYING_TABLE}`,
    );
    this.flagged = on;
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
    let mine: string;
    if (entry.kind === "sql") {
      this.flag(false);
      sql.exec(entry.sql, ...entry.params.map(decodeBindable)).toArray();
      const taken = countThenTake(sql);
      const rowid = entry.rowid === true ? taken.counts.lastRowId : null;
      mine = statementEffects(taken.changes, taken.counts.changes, rowid);
    } else {
      this.flag(true);
      if (entry.kind === "ddl") {
        if (isAlter(entry.sql)) dropCaptureTriggers(sql, schema);
        sql.exec(entry.sql).toArray();
        schema.invalidate();
        syncCaptureTriggers(sql, schema);
      }
      applyRows(this.node, entry.changes, lsn, index);
      mine = effectsHash(takeChanges(sql));
    }
    if (mine !== entry.effects) {
      throw new DivergedError(lsn, index, `effects ${mine}, the master's ${entry.effects}`);
    }
  }

  /** Sets the flag again if an entry lifted it. */
  finish(): void {
    this.flag(true);
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

/** A replica's standing state: the trigger guard's flag set, so user triggers stay off. */
export function ensureReplicaFlag(sql: SqlStorage): void {
  run(
    sql,
    `INSERT INTO ${APPLYING_TABLE} (x) SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM ${APPLYING_TABLE})`,
  );
}
