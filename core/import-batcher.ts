/**
 * Groups a dump's statements (dump-statement.ts) into import batches, each
 * one commit on the master (docs/operations.md, "Backups and restore"), in
 * the dump's order. Consecutive INSERTs into one table with one column list
 * become one multi-row INSERT of bound values, up to the 99 parameters a
 * statement may bind on Durable Objects: one statement for SQLite to compile
 * and the guard to check instead of dozens, which is most of an import's
 * speed. A row of more than 99 values (a 100-column table's rowid and
 * columns) keeps its smallest values as the dump's own literals and binds
 * the rest. A batch closes at about BATCH_BYTES of values (its log record
 * holds their images, within log_record_max_bytes), BATCH_ROWS rows or
 * BATCH_ITEMS statements.
 */
import type { ImportItem } from "./backup-protocol";
import type { DumpStatement, DumpValue } from "./dump-statement";
import { MAX_USER_PARAMS } from "./sql-params";
import { type Exact, isTextBytes } from "./sql-value";

export const BATCH_BYTES = 2_000_000;
export const BATCH_ROWS = 5_000;
export const BATCH_ITEMS = 1_000;

/** A statement of the dump: its place (1-based, skipped ones counted) and line. */
export interface Numbered {
  statement: DumpStatement;
  number: number;
  line: number;
}

/** Which statements of the dump an item stands for. */
export interface Span {
  first: number;
  last: number;
  line: number;
}

/** What a multi-row INSERT was made of: its rows' statements, to send them one by one. */
export interface Grouping {
  prefix: string;
  width: number;
  rows: Span[];
}

export interface ImportBatch {
  items: ImportItem[];
  spans: Span[];
  /** For each item, the rows it inserts (null: it is one statement of the dump as it was). */
  groupings: (Grouping | null)[];
  rows: number;
  bytes: number;
  /**
   * No later batch may bring the parents of rows held back (core/held-rows.ts):
   * they go in with this one, foreign keys checked at its commit, or fail.
   */
  resolve?: boolean;
}

interface Group extends Grouping {
  values: Exact[];
  bytes: number;
}

/** About what a value adds to a log record: its image's text. */
function valueBytes(value: Exact): number {
  if (typeof value === "string") return 2 * value.length + 2;
  if (value instanceof Uint8Array) return 2 * value.byteLength + 2;
  if (isTextBytes(value)) return 2 * value.textBytes.byteLength + 2;
  return 24;
}

export class ImportBatcher {
  private batch: ImportBatch = emptyBatch();
  private group: Group | null = null;
  private readonly done: ImportBatch[] = [];

  add(numbered: Numbered): void {
    const { statement } = numbered;
    const span = { first: numbered.number, last: numbered.number, line: numbered.line };
    if (statement.kind === "skip") return;
    if (statement.kind !== "insert") {
      this.flushGroup();
      if (statement.kind === "sql") {
        this.item({ kind: "sql", sql: statement.sql, params: [] }, span, statement.sql.length, 0);
      } else if (statement.kind === "sequence-reset") {
        this.item({ kind: "sequence-reset" }, span, 32, 0);
      } else {
        for (const row of statement.rows) this.item({ kind: "sequence", ...row }, span, 64, 0);
      }
      return;
    }
    const width = statement.rows[0]?.length ?? 0;
    for (const row of statement.rows) {
      const bytes = rowBytes(row);
      if (width > MAX_USER_PARAMS) {
        this.flushGroup();
        const grouping = { prefix: statement.prefix, width, rows: [span] };
        this.push(wideRow(statement.prefix, statement.sql, row), span, grouping, bytes, 1);
        continue;
      }
      const group = this.group;
      const fits =
        group !== null &&
        group.prefix === statement.prefix &&
        group.width === width &&
        (group.rows.length + 1) * width <= MAX_USER_PARAMS;
      if (!fits) this.flushGroup();
      this.group ??= { prefix: statement.prefix, width, rows: [], values: [], bytes: 0 };
      const current = this.group;
      for (const value of row) current.values.push(value.value);
      current.rows.push(span);
      current.bytes += bytes;
      // A group of large values ends the batch as soon as they fill it.
      if (this.batch.bytes + current.bytes >= BATCH_BYTES) this.flushGroup();
    }
  }

  /** Batches that are full, to send now. */
  take(): ImportBatch[] {
    return this.done.splice(0);
  }

  /** Everything left, as the last batch (none if nothing is left). */
  finish(): ImportBatch[] {
    this.flushGroup();
    if (this.batch.items.length > 0) this.close();
    return this.take();
  }

  private item(item: ImportItem, span: Span, bytes: number, rows: number): void {
    this.push(item, span, null, bytes, rows);
  }

  private push(
    item: ImportItem,
    span: Span,
    grouping: Grouping | null,
    bytes: number,
    rows: number,
  ): void {
    const b = this.batch;
    b.items.push(item);
    b.spans.push(span);
    b.groupings.push(grouping);
    b.bytes += bytes;
    b.rows += rows;
    if (b.bytes >= BATCH_BYTES || b.rows >= BATCH_ROWS || b.items.length >= BATCH_ITEMS) {
      this.close();
    }
  }

  private flushGroup(): void {
    const group = this.group;
    if (group === null) return;
    this.group = null;
    const first = group.rows[0] ?? { first: 0, last: 0, line: 0 };
    const last = group.rows[group.rows.length - 1] ?? first;
    const { prefix, width, rows } = group;
    this.push(
      { kind: "sql", sql: insertSql(prefix, width, rows.length), params: group.values },
      { first: first.first, last: last.last, line: first.line },
      { prefix, width, rows },
      group.bytes,
      rows.length,
    );
  }

  private close(): void {
    this.done.push(this.batch);
    this.batch = emptyBatch();
  }
}

export function emptyBatch(): ImportBatch {
  return { items: [], spans: [], groupings: [], rows: 0, bytes: 0 };
}

export function insertSql(prefix: string, width: number, rows: number): string {
  const tuple = `(${Array.from({ length: width }, () => "?").join(",")})`;
  return `${prefix} VALUES${Array.from({ length: rows }, () => tuple).join(",")}`;
}

/** One row INSERT of a batch: the item, the dump statement it stands for, about its bytes. */
export interface BatchRow {
  item: ImportItem;
  span: Span;
  grouping: Grouping;
  bytes: number;
}

/** A (multi-row) INSERT of a batch as one INSERT per row, each with its own span. */
export function splitRows(item: ImportItem, grouping: Grouping, bytes: number): BatchRow[] {
  const { prefix, width, rows } = grouping;
  if (item.kind !== "sql" || rows.length <= 1) {
    return [{ item, span: rows[0] ?? { first: 0, last: 0, line: 0 }, grouping, bytes }];
  }
  return rows.map((span, row) => ({
    item: rowItem(prefix, width, item.params, row),
    span,
    grouping: { prefix, width, rows: [span] },
    bytes: Math.ceil(bytes / rows.length),
  }));
}

function rowItem(prefix: string, width: number, params: readonly Exact[], row: number): ImportItem {
  return {
    kind: "sql",
    sql: insertSql(prefix, width, 1),
    params: params.slice(row * width, (row + 1) * width),
  };
}

/**
 * The rows of a multi-row INSERT that insertSql made, each an INSERT of its
 * own (for the master, which has the item but not its grouping); null if the
 * item is not of that shape.
 */
export function rowInserts(item: ImportItem, rows: number): ImportItem[] | null {
  if (item.kind !== "sql" || rows < 1 || item.params.length % rows !== 0) return null;
  const width = item.params.length / rows;
  const suffix = insertSql("", width, rows);
  if (!item.sql.endsWith(suffix)) return null;
  const prefix = item.sql.slice(0, item.sql.length - suffix.length);
  return Array.from({ length: rows }, (_, row) => rowItem(prefix, width, item.params, row));
}

/** The same batch with every multi-row INSERT sent as one INSERT per row: the failing row is then one item. */
export function ungrouped(batch: ImportBatch): ImportBatch {
  const out = emptyBatch();
  out.rows = batch.rows;
  out.bytes = batch.bytes;
  if (batch.resolve === true) out.resolve = true;
  batch.items.forEach((item, i) => {
    const grouping = batch.groupings[i];
    if (grouping == null) {
      out.items.push(item);
      out.spans.push(batch.spans[i] ?? { first: 0, last: 0, line: 0 });
      out.groupings.push(null);
      return;
    }
    for (const row of splitRows(item, grouping, 0)) {
      out.items.push(row.item);
      out.spans.push(row.span);
      out.groupings.push(row.grouping);
    }
  });
  return out;
}

function rowBytes(row: readonly DumpValue[]): number {
  return row.reduce((sum, v) => sum + valueBytes(v.value), 0);
}
/**
 * A row wider than the parameters a statement may bind: its smallest values
 * stay the dump's own literals (which SQLite reads exactly as it would have),
 * the rest are bound.
 */
function wideRow(prefix: string, sql: string, row: readonly DumpValue[]): ImportItem {
  const inline = new Set(
    row
      .map((value, i) => ({ i, size: value.end - value.start }))
      .sort((a, b) => a.size - b.size)
      .slice(0, row.length - MAX_USER_PARAMS)
      .map((v) => v.i),
  );
  const params: Exact[] = [];
  const parts = row.map((value, i) => {
    if (inline.has(i)) return sql.slice(value.start, value.end);
    params.push(value.value);
    return "?";
  });
  return { kind: "sql", sql: `${prefix} VALUES(${parts.join(",")})`, params };
}

/** A batch in two, item by item: for a record over log_record_max_bytes. */
export function halves(batch: ImportBatch): ImportBatch[] {
  const middle = Math.ceil(batch.items.length / 2);
  return [0, middle].map((from) => {
    const to = from === 0 ? middle : batch.items.length;
    const groupings = batch.groupings.slice(from, to);
    return {
      items: batch.items.slice(from, to),
      spans: batch.spans.slice(from, to),
      groupings,
      rows: groupings.reduce((n, g) => n + (g?.rows.length ?? 0), 0),
      bytes: Math.ceil(batch.bytes / 2),
      // Rows held back may wait for the second half; only it may have to let them in.
      ...(from > 0 && batch.resolve === true ? { resolve: true } : {}),
    };
  });
}
