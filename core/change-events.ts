/**
 * The change stream's events: one per acknowledged commit, made from its log
 * record. A record holds what replication needs, so an event holds what the
 * record has: the rows each statement changed (after-images and keys; the
 * log keeps no before-images), and the statements themselves for what ships
 * as SQL (schema changes, writes to virtual tables) with their parameters.
 * Values are exact, in the API's encoding (core/api-values.ts).
 */
import { type ApiValue, toApiValue } from "./api-values";
import type { LogRecord } from "./protocol";
import { asciiLower } from "./sql-lexer";
import type { Change } from "./row-capture";
import { decodeCell, decodeRow } from "./sql-value";

/** How a table's key cells and image cells are named, where they still fit. */
export interface TableNames {
  key: string[];
  image: string[];
}

export type Row = Record<string, ApiValue> | ApiValue[];

export interface RowChange {
  table: string;
  op: "insert" | "update" | "delete";
  /** The row's key: after the change (insert, update), before it (delete). */
  key: Row;
  /** An update that moved the row: its key before. */
  oldKey?: Row;
  /** The row after the change (insert, update): the key and every column but generated ones. */
  row?: Row;
}

export interface ChangeStatement {
  /**
   * As the replicas run it: parameters numbered, the guard's CTE in front, an
   * INTEGER bound as its decimal text inside CAST(?N AS INTEGER).
   */
  sql: string;
  params?: ApiValue[];
}

export interface ChangeEvent {
  lsn: number;
  term: number;
  /** The master's clock at commit, ms since the epoch. */
  ts: number;
  changes: RowChange[];
  statements: ChangeStatement[];
}

const OPS = { I: "insert", U: "update", D: "delete" } as const;

/**
 * Cells as an object keyed by column names when the feed has names for them
 * (the table's definition has not changed since: change-feed.ts), else as an
 * array in the table's column order when it was written.
 */
function named(image: string, names: readonly string[] | undefined): Row {
  const values = decodeRow(image).map((v) => toApiValue(v));
  if (names === undefined || names.length !== values.length) return values;
  // Own properties, defined: a column named __proto__ is a key like any other
  // (assigning it would set the prototype instead), and the object stays a plain
  // one that RPC can clone.
  const out: Record<string, ApiValue> = {};
  names.forEach((name, i) => {
    Object.defineProperty(out, name, {
      value: values[i] ?? null,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  });
  return out;
}

function rowChange(change: Change, names: TableNames | undefined): RowChange {
  const op = OPS[change.op];
  const key = change.op === "D" ? change.ok : change.nk;
  const out: RowChange = { table: change.t, op, key: named(key ?? "", names?.key) };
  if (change.op === "U" && change.ok !== undefined && change.ok !== change.nk) {
    out.oldKey = named(change.ok, names?.key);
  }
  if (change.img !== undefined) out.row = named(change.img, names?.image);
  return out;
}

/**
 * The event of `record`, or null when `tables` (ASCII lower case) filters out everything in it.
 * With a filter, only the named tables' row changes are kept, and no
 * statements (which tables a statement writes is SQLite's to know).
 */
export function changeEvent(
  record: LogRecord,
  /** The names of `table`'s cells in entry `entry` of the record, if they are known. */
  namesOf: (table: string, entry: number) => TableNames | undefined,
  tables: ReadonlySet<string> | null,
): ChangeEvent | null {
  const changes: RowChange[] = [];
  const statements: ChangeStatement[] = [];
  for (const [index, entry] of record.entries.entries()) {
    if (entry.kind !== "sql") {
      for (const change of entry.changes) {
        if (tables === null || tables.has(asciiLower(change.t))) {
          changes.push(rowChange(change, namesOf(change.t, index)));
        }
      }
    }
    if (tables !== null) continue;
    if (entry.kind === "ddl") statements.push({ sql: entry.sql });
    if (entry.kind === "sql") {
      const params = entry.params.map((cell) => toApiValue(decodeCell(cell)));
      statements.push({ sql: entry.sql, params });
    }
  }
  if (tables !== null && changes.length === 0) return null;
  return { lsn: record.lsn, term: record.term, ts: record.ts, changes, statements };
}
