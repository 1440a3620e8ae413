/**
 * Row capture on one node: keeping every user table's capture triggers in
 * step with its schema, and taking the changes they recorded.
 */

import type { RecordBudget } from "../../core/record-budget";
import {
  CAPTURE_PREFIX,
  CHANGES_TABLE,
  type Change,
  captureTriggers,
  type StatementCounts,
} from "../../core/row-capture";
import { isCapturedTable, type SchemaObject } from "../../core/schema-info";
import { asciiLower, quoteIdent } from "../../core/sql-lexer";
import { eachRowToEnd, run } from "./run";
import type { Schema } from "./schema";

export function isCaptureTrigger(name: string): boolean {
  return name.startsWith(CAPTURE_PREFIX);
}

/**
 * Drops capture triggers that no longer match their table and creates the
 * missing ones. Runs after every schema change, inside its transaction.
 */
export function syncCaptureTriggers(sql: SqlStorage, schema: Schema): void {
  const wanted = new Map<string, string>();
  for (const table of schema.tables().values()) {
    if (!isCapturedTable(table)) continue;
    for (const trigger of captureTriggers(table)) wanted.set(trigger.name, trigger.sql);
  }
  let changed = false;
  const existing = new Set<string>();
  const outranked = tablesWithLaterTriggers(schema.objects());
  for (const object of schema.objects()) {
    if (object.type !== "trigger" || !isCaptureTrigger(object.name)) continue;
    if (wanted.get(object.name) === object.sql && !outranked.has(asciiLower(object.tblName))) {
      existing.add(object.name);
      continue;
    }
    run(sql, `DROP TRIGGER IF EXISTS ${quoteIdent(object.name)}`);
    changed = true;
  }
  for (const [name, text] of wanted) {
    if (existing.has(name)) continue;
    run(sql, text);
    changed = true;
  }
  if (changed) schema.invalidate();
}

/** About what one captured change adds to a record: its images' text and JSON framing. */
function changeBytes(row: readonly SqlStorageValue[]): number {
  let bytes = 32;
  for (let i = 1; i <= 5; i++) {
    const value = row[i];
    if (typeof value === "string") bytes += value.length;
  }
  return bytes;
}

/**
 * Tables where a user trigger is newer than one of the table's capture
 * triggers. SQLite fires a table's triggers newest first (each one is put at
 * the head of the table's list as sqlite_schema is read in rowid order), and
 * the capture triggers must fire before every user trigger: a user AFTER
 * trigger that changes the row it fires on would otherwise be captured before
 * the row's own change, whose image (NEW, OLD) is then stale, and one that
 * calls RAISE(IGNORE) would abandon the capture triggers after it. Their
 * capture triggers are made again, after the user's.
 */
function tablesWithLaterTriggers(objects: readonly SchemaObject[]): Set<string> {
  const firstCapture = new Map<string, number>();
  const out = new Set<string>();
  objects.forEach((object, position) => {
    if (object.type !== "trigger") return;
    // tbl_name is the name as the trigger's ON clause spelled it: SQLite
    // matches table names with ASCII case folded, and so must this.
    const table = asciiLower(object.tblName);
    if (isCaptureTrigger(object.name)) {
      if (!firstCapture.has(table)) firstCapture.set(table, position);
    } else if (firstCapture.has(table)) {
      out.add(table);
    }
  });
  return out;
}

/**
 * Drops every capture trigger: ALTER TABLE refuses to drop or rename a
 * column a trigger still names. syncCaptureTriggers puts them back after.
 */
export function dropCaptureTriggers(sql: SqlStorage, schema: Schema): void {
  for (const object of schema.objects()) {
    if (object.type === "trigger" && isCaptureTrigger(object.name)) {
      run(sql, `DROP TRIGGER IF EXISTS ${quoteIdent(object.name)}`);
    }
  }
  schema.invalidate();
}

/**
 * Takes what row capture recorded, emptying its buffer in the same step:
 * `DELETE ... RETURNING`. SQLite's counters for the statement before it come
 * back in the same rows (a DELETE counts only once it completes), so the
 * master learns a statement's changes() with no statement of its own; only
 * when nothing was captured does it ask separately.
 */
export function takeChanges(sql: SqlStorage, budget?: RecordBudget): Change[] {
  return take(sql, budget).changes;
}

export function takeWithCounts(
  sql: SqlStorage,
  budget?: RecordBudget,
): { changes: Change[]; counts: StatementCounts } {
  const taken = take(sql, budget);
  // Nothing captured: a statement on ordinary tables changed nothing (the DELETE
  // has just set changes() to its own 0, so there is nothing left to ask).
  return { changes: taken.changes, counts: taken.counts ?? { changes: 0, lastRowId: "0" } };
}

/**
 * For a statement whose writes may reach no capture trigger (a virtual
 * table's): SQLite's counters asked first, then the changes taken.
 */
export function countThenTake(
  sql: SqlStorage,
  budget?: RecordBudget,
): { changes: Change[]; counts: StatementCounts } {
  const row = sql
    .exec<{ c: number; r: string }>("SELECT changes() AS c, CAST(last_insert_rowid() AS TEXT) AS r")
    .one();
  const counts = { changes: Number(row.c), lastRowId: row.r };
  return { changes: take(sql, budget).changes, counts };
}

function take(
  sql: SqlStorage,
  budget: RecordBudget | undefined,
): { changes: Change[]; counts: StatementCounts | null } {
  const cursor = sql
    .exec(
      `DELETE FROM ${CHANGES_TABLE} RETURNING seq, tbl, op, ok, nk, img, changes(), CAST(last_insert_rowid() AS TEXT)`,
    )
    .raw();
  const rows: SqlStorageValue[][] = [];
  // Rows come from the cursor one at a time: past the budget none is kept, but
  // the cursor is still read to its end, or its transaction could not roll back.
  eachRowToEnd(cursor, (row) => {
    budget?.add(changeBytes(row));
    rows.push(row);
  });
  const first = rows[0];
  if (first === undefined) return { changes: [], counts: null };
  // RETURNING promises no order: capture order is seq order.
  let ordered = true;
  for (let i = 1; i < rows.length && ordered; i++) {
    ordered = Number(rows[i - 1]?.[0]) < Number(rows[i]?.[0]);
  }
  if (!ordered) rows.sort((a, b) => Number(a[0]) - Number(b[0]));
  const changes = rows.map((row) => {
    const change: Change = { t: String(row[1]), op: row[2] as Change["op"] };
    if (row[3] !== null) change.ok = String(row[3]);
    if (row[4] !== null) change.nk = String(row[4]);
    if (row[5] !== null) change.img = String(row[5]);
    return change;
  });
  return { changes, counts: { changes: Number(first[6]), lastRowId: String(first[7]) } };
}
