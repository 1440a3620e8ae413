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
 * Column names are SQLite's for the statement as sent (names.ts).
 */
import { type ApiValue, apiValueBytes, toApiValue } from "../../core/api-values";
import { ApiError } from "../../core/errors";
import { type BoundBody, guardCte } from "../../core/sql-params";
import { cellSql, decodeCell, decodeRow } from "../../core/sql-value";
import { queryNames } from "./names";
import { eachRowToEnd } from "./run";
import type { SqlNode } from "./schema";

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
    readonly maxRows = MAX_QUERY_ROWS,
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

/** The rows of a SELECT, VALUES or WITH statement, every value exact. */
export function readExact(node: SqlNode, bound: BoundBody, budget: ResultBudget): ExactRows {
  const columns = queryNames(node, bound);
  if (columns.length === 0) return { columns, rows: [] };
  const names = columns.map((_, i) => `c${i}`);
  const cells = names.map((n) => `(${cellSql(n)})`).join(", ");
  const wrapped =
    `WITH ${guardCte(bound.guard)}, _repl_q(${names.join(", ")}) AS ` +
    `(SELECT * FROM (${bound.body}) LIMIT -1 OFFSET 0) SELECT ${cells} FROM _repl_q` +
    // One row past the limit tells the budget it is exceeded, and bounds what
    // is read to the end (a recursive CTE may never end by itself).
    ` LIMIT ${budget.maxRows + 1}`;
  const rows: ApiValue[][] = [];
  // Read to its end (at most the row limit) even past the budget (run.ts).
  eachRowToEnd(node.sql.exec(wrapped, ...bound.params, null).raw(), (raw) => {
    const row = raw.map((cell) => toApiValue(decodeCell(String(cell))));
    budget.take(rows.length, columns, row);
    rows.push(row);
  });
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
  return readToEnd(cursor, cursor.columnNames, budget, (raw) => raw.map(runtimeValue));
}

/**
 * The RETURNING rows of a write whose clause core/returning.ts rewrote: one
 * column, each row's values as cells, `columns` named by SQLite
 * (durable-objects/sqlite/names.ts). Read to the end even past the budget,
 * as readRuntime is.
 */
export function readReturning(
  cursor: SqlStorageCursor<Record<string, SqlStorageValue>>,
  columns: string[],
  budget: ResultBudget,
): ExactRows {
  return readToEnd(cursor, columns, budget, (raw) => {
    const row = decodeRow(String(raw[0])).map((value) => toApiValue(value));
    if (row.length !== columns.length) {
      throw new Error(`RETURNING gave ${row.length} values where ${columns.length} were named`);
    }
    return row;
  });
}

/** Every row through `toRow` within the budget; the cursor read to its end whatever is refused. */
function readToEnd(
  cursor: SqlStorageCursor<Record<string, SqlStorageValue>>,
  columns: string[],
  budget: ResultBudget,
  toRow: (raw: SqlStorageValue[]) => ApiValue[],
): ExactRows {
  const rows: ApiValue[][] = [];
  eachRowToEnd(cursor.raw(), (raw) => {
    const row = toRow(raw);
    budget.take(rows.length, columns, row);
    rows.push(row);
  });
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
