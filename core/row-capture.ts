/**
 * Row capture: what each statement changed, as SQLite did it. Every user
 * table carries three internal AFTER triggers that append each inserted,
 * updated and deleted row to `_repl_changes` as exact cells: the rows a
 * statement wrote itself, through triggers, through foreign-key actions, and
 * the rows DROP TABLE's cascades delete. The master ships these images; a
 * replica applies them and captures its own changes the same way, so both
 * sides can compare what they did (effectsHash).
 */
import { createHash } from "node:crypto";
import { type TableInfo, imageSqlColumns, keySqlColumns } from "./schema-info";
import { quoteIdent, quoteString } from "./sql-lexer";
import { rowSql } from "./sql-value";
import { APPLYING_TABLE } from "./trigger-guard";

export const CHANGES_TABLE = "_repl_changes";
export const CAPTURE_PREFIX = "_repl_cap_";

/**
 * The trigger guard's flag holds 2 while a replica applies rows it checks
 * another way (row-apply.ts, `mustHit`): capture is off then, as user
 * triggers are whenever the flag holds a row. On the master the flag is empty.
 */
export const UNCAPTURED = 2;
const CAPTURE_ON = `NOT EXISTS (SELECT 1 FROM ${APPLYING_TABLE} WHERE x = ${UNCAPTURED})`;

export type ChangeOp = "I" | "U" | "D";

/** One captured row change. Keys and images are rows of cells (sql-value.ts). */
export interface Change {
  /** Table name. */
  t: string;
  op: ChangeOp;
  /** The row's key before (U, D). */
  ok?: string;
  /** The row's key after (I, U). */
  nk?: string;
  /** The row after (I, U): for rowid tables the rowid first, then `TableInfo.columns`. */
  img?: string;
}

export function captureTriggerName(op: ChangeOp, table: string): string {
  return `${CAPTURE_PREFIX}${op.toLowerCase()}_${table}`;
}

function keyCells(table: TableInfo, row: "NEW" | "OLD"): string {
  return rowSql(keySqlColumns(table).map((c) => `${row}.${c}`));
}

function imageCells(table: TableInfo): string {
  return rowSql(imageSqlColumns(table).map((c) => `NEW.${c}`));
}

/** The three capture triggers of one table. */
export function captureTriggers(table: TableInfo): { name: string; sql: string }[] {
  const on = quoteIdent(table.name);
  const name = quoteString(table.name);
  const insert = (op: ChangeOp, ok: string, nk: string, img: string) =>
    `INSERT INTO ${CHANGES_TABLE} (tbl, op, ok, nk, img) VALUES (${name}, '${op}', ${ok}, ${nk}, ${img});`;
  const make = (op: ChangeOp, event: string, body: string) => {
    const trigger = captureTriggerName(op, table.name);
    return {
      name: trigger,
      sql: `CREATE TRIGGER ${quoteIdent(trigger)} AFTER ${event} ON ${on} WHEN ${CAPTURE_ON} BEGIN ${body} END`,
    };
  };
  return [
    make("I", "INSERT", insert("I", "NULL", keyCells(table, "NEW"), imageCells(table))),
    make(
      "U",
      "UPDATE",
      insert("U", keyCells(table, "OLD"), keyCells(table, "NEW"), imageCells(table)),
    ),
    make("D", "DELETE", insert("D", keyCells(table, "OLD"), "NULL", "NULL")),
  ];
}

/** A row of `_repl_changes`, as read back. */
export type ChangeRow = {
  tbl: string;
  op: string;
  ok: string | null;
  nk: string | null;
  img: string | null;
};

export function toChange(row: ChangeRow): Change {
  const change: Change = { t: row.tbl, op: row.op as ChangeOp };
  if (row.ok !== null) change.ok = row.ok;
  if (row.nk !== null) change.nk = row.nk;
  if (row.img !== null) change.img = row.img;
  return change;
}

/**
 * SHA-256 of the text's UTF-8, first 128 bits in hex. node:crypto's native
 * hash: in workerd it hashes a short row image in about 3 µs where a plain-JS
 * SHA-256 took 13, and every log entry is hashed on the master (and again on a
 * replica that checks it). test/effects-digest.test.ts holds it to the plain-JS
 * digest bit for bit, lone surrogates included, so records written by either
 * check alike.
 */
export function digest(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex").slice(0, 32);
}

/**
 * A digest of what a list of changes leaves behind: for every row it touched,
 * its final image, or that it is gone. Order-free on purpose: a replica applying
 * the images, whose own foreign-key actions touch the same rows in another
 * order (or twice), leaves the same rows, and gets the same digest.
 */
export function effectsHash(changes: readonly Change[]): string {
  const final = new Map<string, string | null>();
  const at = (table: string, key: string) => `${table.length}:${table}\u001e${key}`;
  for (const change of changes) {
    if (change.ok !== undefined && change.ok !== change.nk)
      final.set(at(change.t, change.ok), null);
    if (change.nk !== undefined) final.set(at(change.t, change.nk), change.img ?? null);
  }
  const keys = [...final.keys()].sort();
  const text = keys.map((key) => `${key}\u001d${final.get(key) ?? "\u0000gone"}`).join("\u001c");
  return digest(text);
}

/** What SQLite's counters say the statement that just ran did. */
export interface StatementCounts {
  changes: number;
  /** last_insert_rowid() as decimal text (it may pass 2^53). */
  lastRowId: string;
}

/**
 * The effects of a statement replicas run themselves (`sql` entries): the rows
 * it left behind and SQLite's counters for it. A write to a virtual table
 * reaches no capture trigger, so for fts5 the counters are what is compared:
 * the rows it changed and, when the statement inserted (`lastRowId` not null),
 * the rowid it gave the last one (which SQLite picks at random once rowid
 * 2^63-1 is taken). Otherwise last_insert_rowid() is the connection's, not the
 * statement's, and differs from node to node.
 */
export function statementEffects(
  changes: readonly Change[],
  changed: number,
  lastRowId: string | null,
): string {
  const text = `${effectsHash(changes)}\u001c${changed}\u001c${lastRowId ?? "-"}`;
  return digest(text);
}
