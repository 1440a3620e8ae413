/**
 * Row capture on one node: keeping every user table's capture triggers in
 * step with its schema, and taking the changes they recorded.
 */
import {
  CAPTURE_PREFIX,
  CHANGES_TABLE,
  type Change,
  captureTriggers,
} from "../../core/row-capture";
import { isCapturedTable } from "../../core/schema-info";
import { quoteIdent } from "../../core/sql-lexer";
import { run } from "./run";
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
  for (const object of schema.objects()) {
    if (object.type !== "trigger" || !isCaptureTrigger(object.name)) continue;
    if (wanted.get(object.name) === object.sql) {
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

/** What the statement that just ran did, by SQLite's own counters. */
export interface StatementCounts {
  changes: number;
  /** last_insert_rowid() as decimal text (it may pass 2^53). */
  lastRowId: string;
}

/**
 * Takes what row capture recorded, emptying its buffer in the same step:
 * `DELETE ... RETURNING`. SQLite's counters for the statement before it come
 * back in the same rows (a DELETE counts only once it completes), so the
 * master learns a statement's changes() with no statement of its own; only
 * when nothing was captured does it ask separately.
 */
export function takeChanges(sql: SqlStorage): Change[] {
  return take(sql).changes;
}

export function takeWithCounts(sql: SqlStorage): { changes: Change[]; counts: StatementCounts } {
  const taken = take(sql);
  if (taken.counts !== null) return { changes: taken.changes, counts: taken.counts };
  const row = sql
    .exec<{ c: number; r: string }>("SELECT changes() AS c, CAST(last_insert_rowid() AS TEXT) AS r")
    .one();
  return { changes: [], counts: { changes: Number(row.c), lastRowId: row.r } };
}

function take(sql: SqlStorage): { changes: Change[]; counts: StatementCounts | null } {
  const rows = [
    ...sql
      .exec(
        `DELETE FROM ${CHANGES_TABLE} RETURNING seq, tbl, op, ok, nk, img, changes(), CAST(last_insert_rowid() AS TEXT)`,
      )
      .raw(),
  ];
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
