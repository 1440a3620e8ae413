/**
 * Applying the master's log entries on a replica, inside the batch's
 * transaction, and checking that what the replica did is what the master did:
 * the replica captures its own changes exactly as the master captured its
 * (row-capture.ts), and their digests must agree entry by entry.
 */
import type { LogEntry, LogRecord } from "../../core/protocol";
import { type Change, effectsHash } from "../../core/row-capture";
import { applyChanges } from "../../core/row-apply";
import { decodeBindable } from "../../core/sql-params";
import { tokenize } from "../../core/sql-lexer";
import { SqlBuilder, cellSql, decodeCell } from "../../core/sql-value";
import { APPLYING_TABLE } from "../../core/trigger-guard";
import { dropCaptureTriggers, syncCaptureTriggers, takeChanges } from "./capture";
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
      node.sql.exec(statement.sql, ...statement.params);
    }
    start = end;
  }
}

function isAlter(sql: string): boolean {
  const first = tokenize(sql)[0];
  return first?.type === "word" && first.value.toUpperCase() === "ALTER";
}

function applyEntry(node: SqlNode, entry: LogEntry, lsn: number, index: number): void {
  const sql = node.sql;
  if (entry.kind === "sql") {
    // A write to a virtual table: run as the master ran it, triggers and all.
    sql.exec(entry.sql, ...entry.params.map(decodeBindable)).toArray();
  } else {
    // The master's rows hold every trigger's effects: triggers stay off here.
    sql.exec(`INSERT INTO ${APPLYING_TABLE} (x) VALUES (1)`);
    if (entry.kind === "ddl") {
      if (isAlter(entry.sql)) dropCaptureTriggers(sql, node.schema);
      sql.exec(entry.sql).toArray();
      node.schema.invalidate();
      syncCaptureTriggers(sql, node.schema);
    }
    applyRows(node, entry.changes, lsn, index);
    sql.exec(`DELETE FROM ${APPLYING_TABLE}`);
  }
  const mine = effectsHash(takeChanges(sql));
  if (mine !== entry.effects) {
    throw new DivergedError(lsn, index, `effects ${mine}, the master's ${entry.effects}`);
  }
}

/** Applies one record's entries and AUTOINCREMENT counters; throws DivergedError. */
export function applyRecord(node: SqlNode, record: LogRecord): void {
  record.entries.forEach((entry, i) => {
    applyEntry(node, entry, record.lsn, i);
  });
  if (record.sequence !== undefined) restoreSequence(node.sql, record.sequence);
}

/** sqlite_sequence as the master had it (AUTOINCREMENT counters), values exact. */
export function restoreSequence(sql: SqlStorage, rows: NonNullable<LogRecord["sequence"]>): void {
  sql.exec("DELETE FROM sqlite_sequence");
  for (const { name, seq } of rows) {
    const value = new SqlBuilder();
    const text = value.value(decodeCell(seq));
    sql.exec(`INSERT INTO sqlite_sequence (name, seq) VALUES (?, ${text})`, name, ...value.params);
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
