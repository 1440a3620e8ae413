/**
 * Between Hrana's shapes and the cluster's: a statement (stored SQL and named
 * arguments resolved to the positional parameters SQLite numbers), a result
 * in Hrana's form, and an error with the code libSQL clients expect.
 */
import type { ApiValue } from "../api-values";
import { ApiError, type ErrorBody } from "../errors";
import type { Statement, StatementResult } from "../protocol";
import { tokenize } from "../sql-lexer";
import { parameterNumbers } from "../sql-params";
import type { Exact } from "../sql-value";
import type { HranaError, HranaStmt, StmtResult } from "./proto";
import { fromHranaValue, toHranaValue } from "./values";

export const MAX_STORED_SQL = 1000;

/** The SQL text a statement names: inline, or stored on the stream by `store_sql`. */
export function sqlText(
  stmt: { sql?: string | null; sql_id?: number | null },
  stored: ReadonlyMap<number, string>,
): string {
  if (typeof stmt.sql === "string" && (stmt.sql_id === undefined || stmt.sql_id === null)) {
    return stmt.sql;
  }
  if (
    stmt.sql_id !== undefined &&
    stmt.sql_id !== null &&
    (stmt.sql === undefined || stmt.sql === null)
  ) {
    const sql = stored.get(stmt.sql_id);
    if (sql === undefined) {
      throw new ApiError("BAD_REQUEST", `no SQL stored under sql_id ${stmt.sql_id}`, {
        hranaCode: "SQL_NOT_FOUND",
      });
    }
    return sql;
  }
  throw new ApiError("BAD_REQUEST", "a statement needs exactly one of sql and sql_id", {
    hranaCode: "SQL_NOT_FOUND",
  });
}

/**
 * A Hrana statement as the cluster's: positional `args` take numbers 1, 2, …;
 * `named_args` take the numbers SQLite gives those names (`:a`, `@a`, `$a`, with
 * or without the prefix, as sqld accepts them).
 */
export function toStatement(stmt: HranaStmt, stored: ReadonlyMap<number, string>): Statement {
  const sql = sqlText(stmt, stored);
  const args = stmt.args ?? [];
  const named = stmt.named_args ?? [];
  const params: Exact[] = args.map((v, i) => fromHranaValue(v, `args.${i}`));
  if (named.length === 0) return { sql, params };
  const tokens = tokenize(sql);
  const numbers = parameterNumbers(tokens);
  // As sqld binds them: a name with its prefix binds that parameter; a bare
  // name binds every parameter of that name, whatever its prefix (`:a` and `@a`).
  const byName = new Map<string, number[]>();
  const add = (name: string, number: number) => {
    const list = byName.get(name) ?? [];
    if (!list.includes(number)) list.push(number);
    byName.set(name, list);
  };
  numbers.forEach((number, i) => {
    const text = tokens[i]?.text;
    if (text === undefined || text.startsWith("?")) return;
    add(text, number);
    add(text.slice(1), number);
  });
  const count = Math.max(0, ...numbers.values());
  const out: (Exact | undefined)[] = Array.from({ length: count }, (_, i) => params[i]);
  named.forEach((arg, i) => {
    const found = byName.get(arg.name);
    if (found === undefined) {
      throw new ApiError(
        "BAD_REQUEST",
        `named_args.${i}: the statement has no parameter ${arg.name}`,
        {
          hranaCode: "ARGS_INVALID",
        },
      );
    }
    const value = fromHranaValue(arg.value, `named_args.${i}`);
    for (const number of found) out[number - 1] = value;
  });
  const missing = out.indexOf(undefined);
  if (missing >= 0) {
    throw new ApiError("BAD_REQUEST", `parameter ${missing + 1} has no value`, {
      hranaCode: "ARGS_INVALID",
    });
  }
  return { sql, params: out as Exact[] };
}

/** The last rowid as Hrana's string: exact, whatever its size. */
function rowidText(value: ApiValue): string | null {
  if (value === null) return null;
  if (typeof value === "number") return String(value);
  if (typeof value === "object" && "int" in value) return value.int;
  return null;
}

/** A write's or a query's result (rows as arrays beside `columns`) in Hrana's form. */
export function toStmtResult(
  result: Pick<StatementResult, "rowsWritten" | "lastRowId" | "rows" | "columns">,
  wantRows = true,
  lsn: number | null = null,
): StmtResult {
  const columns = result.columns ?? [];
  const rows = wantRows ? ((result.rows ?? []) as ApiValue[][]) : [];
  return {
    cols: columns.map((name) => ({ name, decltype: null })),
    rows: rows.map((row) => row.map(toHranaValue)),
    affected_row_count: result.rowsWritten,
    last_insert_rowid: rowidText(result.lastRowId),
    ...(lsn === null ? {} : { replication_index: String(lsn) }),
  };
}

const SQLITE_CODE = /\bSQLITE_[A-Z_]+\b/;

/**
 * The code a libSQL client shows for an error: SQLite's own name for SQLite's
 * errors (SQLITE_CONSTRAINT, SQLITE_ERROR, …), the cluster's code otherwise.
 */
export function toHranaError(error: ErrorBody): HranaError {
  const given = error.details?.hranaCode;
  if (typeof given === "string") return { message: error.message, code: given };
  if (error.code === "INVALID_SQL") {
    const named = SQLITE_CODE.exec(error.message)?.[0];
    const code =
      named ??
      (/constraint failed/i.test(error.message)
        ? "SQLITE_CONSTRAINT"
        : /datatype mismatch/i.test(error.message)
          ? "SQLITE_MISMATCH"
          : /too big/i.test(error.message)
            ? "SQLITE_TOOBIG"
            : "SQLITE_ERROR");
    return { message: error.message, code };
  }
  if (error.code === "PAYLOAD_TOO_LARGE") return { message: error.message, code: "SQLITE_TOOBIG" };
  return { message: error.message, code: error.code };
}
