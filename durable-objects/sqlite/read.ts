/**
 * Reading a statement's result exactly. The runtime hands INTEGERs over as
 * doubles and cannot tell REAL 2.0 from INTEGER 2, so the result is read
 * through a wrapper that renders every value as a cell in SQL:
 *
 *   WITH _repl_guard(x) AS (SELECT ?G),
 *        _repl_q(c0, c1, ...) AS (SELECT * FROM (<statement>) LIMIT -1 OFFSET 0)
 *   SELECT <cell of c0>, <cell of c1>, ... FROM _repl_q
 *
 * The OFFSET keeps SQLite from flattening the statement into the outer query,
 * which would evaluate each result expression once per use in the cell (twice
 * a random()); rows keep the statement's order, streamed, not materialised.
 * Column names come from `SELECT * FROM (<statement>) LIMIT 0`: SQLite gives
 * those the statement's own names unless two collide, when it appends ":N";
 * only then is the statement itself asked for its names.
 */
import { type ApiValue, apiValueBytes, toApiValue } from "../../core/api-values";
import { ApiError } from "../../core/errors";
import { type BoundBody, guardCte, guardedStatement, originalNames } from "../../core/sql-params";
import { cellSql, decodeCell } from "../../core/sql-value";

/** Most rows one query, or one statement of an exec, returns; past it the client gets 413. */
export const MAX_QUERY_ROWS = 10_000;

/**
 * Most bytes of row data one response carries (a query, or every statement of
 * an exec together), counted as the JSON text would be. It keeps a result well
 * under workerd's 32 MiB RPC limit and the memory of the node that reads it.
 */
export const MAX_RESULT_BYTES = 8 * 1024 * 1024;

export interface ExactRows {
  columns: string[];
  rows: ApiValue[][];
}

/** One byte budget for a whole response, however many statements return rows. */
export class ResultBudget {
  private bytes = 0;

  constructor(
    private readonly maxRows = MAX_QUERY_ROWS,
    private readonly maxBytes = MAX_RESULT_BYTES,
  ) {}

  /** Counts one more row (the statement's `count`-th); throws 413 past the limits. */
  take(count: number, names: readonly string[], row: readonly ApiValue[]): void {
    if (count >= this.maxRows) {
      throw new ApiError(
        "PAYLOAD_TOO_LARGE",
        `the result has more than ${this.maxRows} rows: add a LIMIT and page with a WHERE on the key`,
        { maxRows: this.maxRows },
      );
    }
    let size = 2;
    row.forEach((value, i) => {
      size += (names[i]?.length ?? 0) + 4 + apiValueBytes(value);
    });
    this.bytes += size;
    if (this.bytes > this.maxBytes) {
      throw new ApiError(
        "PAYLOAD_TOO_LARGE",
        `the result is over ${this.maxBytes} bytes: select fewer columns or page with a LIMIT`,
        { maxBytes: this.maxBytes },
      );
    }
  }
}

function columnNames(sql: SqlStorage, bound: BoundBody): string[] {
  const probe = `WITH ${guardCte(bound.guard)} SELECT * FROM (${bound.body}) LIMIT 0`;
  const cursor = sql.exec(probe, ...bound.params, null);
  const names = cursor.columnNames;
  cursor.toArray(); // finished, so workerd can reuse the compiled probe
  if (!names.some((name) => name.includes(":"))) return originalNames(bound, names);
  // Renamed by SQLite (or a name with a colon of its own): the statement's own names.
  const own = guardedStatement(bound);
  const ownCursor = sql.exec(own.sql, ...own.params);
  const ownNames = ownCursor.columnNames;
  for (const _ of ownCursor.raw()) {
    // read through to finish the statement (a fallback: names collided)
  }
  return originalNames(bound, ownNames);
}

/** The rows of a SELECT, VALUES or WITH statement, every value exact. */
export function readExact(sql: SqlStorage, bound: BoundBody, budget: ResultBudget): ExactRows {
  const columns = columnNames(sql, bound);
  if (columns.length === 0) return { columns, rows: [] };
  const names = columns.map((_, i) => `c${i}`);
  const cells = names.map((n) => `(${cellSql(n)})`).join(", ");
  const wrapped =
    `WITH ${guardCte(bound.guard)}, _repl_q(${names.join(", ")}) AS ` +
    `(SELECT * FROM (${bound.body}) LIMIT -1 OFFSET 0) SELECT ${cells} FROM _repl_q`;
  const rows: ApiValue[][] = [];
  for (const raw of sql.exec(wrapped, ...bound.params, null).raw()) {
    const row = raw.map((cell) => toApiValue(decodeCell(String(cell))));
    budget.take(rows.length, columns, row);
    rows.push(row);
  }
  return { columns, rows };
}

/**
 * Rows as the runtime gives them, for what cannot be wrapped (EXPLAIN, and
 * the RETURNING rows of a write): an integral number is read as an INTEGER.
 * A write's cursor is read to its end even past the budget, so the statement
 * is finished before its transaction rolls back.
 */
export function readRuntime(
  cursor: SqlStorageCursor<Record<string, SqlStorageValue>>,
  budget: ResultBudget,
): ExactRows {
  const columns = cursor.columnNames;
  const rows: ApiValue[][] = [];
  let refused: unknown = null;
  for (const raw of cursor.raw()) {
    if (refused !== null) continue;
    const row = raw.map(runtimeValue);
    try {
      budget.take(rows.length, columns, row);
      rows.push(row);
    } catch (error) {
      refused = error;
    }
  }
  if (refused !== null) throw refused;
  return { columns, rows };
}

/**
 * The RETURNING rows of a write whose clause core/returning.ts extended: the
 * statement's own `width` columns give the names, the cells after them the
 * values. Read to the end even past the budget, as readRuntime is.
 */
export function readReturning(
  cursor: SqlStorageCursor<Record<string, SqlStorageValue>>,
  bound: BoundBody,
  width: number,
  budget: ResultBudget,
): ExactRows {
  const names = cursor.columnNames;
  if (names.length !== 2 * width) {
    for (const _ of cursor.raw()) {
      // finish the statement before its savepoint is undone
    }
    throw new Error(`RETURNING gave ${names.length} columns where ${2 * width} were expected`);
  }
  const columns = originalNames(bound, names.slice(0, width));
  const rows: ApiValue[][] = [];
  let refused: unknown = null;
  for (const raw of cursor.raw()) {
    if (refused !== null) continue;
    const row = raw.slice(width).map((cell) => toApiValue(decodeCell(String(cell))));
    try {
      budget.take(rows.length, columns, row);
      rows.push(row);
    } catch (error) {
      refused = error;
    }
  }
  if (refused !== null) throw refused;
  return { columns, rows };
}

function runtimeValue(value: SqlStorageValue): ApiValue {
  if (value instanceof ArrayBuffer) return toApiValue(new Uint8Array(value));
  if (typeof value === "number" && Number.isInteger(value) && !Object.is(value, -0)) {
    return Number.isSafeInteger(value) ? value : toApiValue(value);
  }
  return typeof value === "number" ? toApiValue(value) : value;
}

/** Rows as objects keyed by column name (the API's default shape). */
export function asObjects(result: ExactRows): Record<string, ApiValue>[] {
  return result.rows.map((row) => {
    const out: Record<string, ApiValue> = {};
    result.columns.forEach((name, i) => {
      out[name] = row[i] ?? null;
    });
    return out;
  });
}
