/**
 * Row capture on one node: keeping every user table's capture triggers in
 * step with its schema, and taking the changes they recorded.
 */
import {
  CAPTURE_PREFIX,
  CHANGES_TABLE,
  type Change,
  type ChangeRow,
  captureTriggers,
  toChange,
} from "../../core/row-capture";
import { isCapturedTable } from "../../core/schema-info";
import { quoteIdent } from "../../core/sql-lexer";
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
    sql.exec(`DROP TRIGGER IF EXISTS ${quoteIdent(object.name)}`);
    changed = true;
  }
  for (const [name, text] of wanted) {
    if (existing.has(name)) continue;
    sql.exec(text);
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
      sql.exec(`DROP TRIGGER IF EXISTS ${quoteIdent(object.name)}`);
    }
  }
  schema.invalidate();
}

/** The changes recorded since the last call, in the order SQLite made them. */
export function takeChanges(sql: SqlStorage): Change[] {
  const rows = sql
    .exec<ChangeRow>(`SELECT tbl, op, ok, nk, img FROM ${CHANGES_TABLE} ORDER BY seq`)
    .toArray();
  if (rows.length === 0) return [];
  sql.exec(`DELETE FROM ${CHANGES_TABLE}`);
  return rows.map(toChange);
}
