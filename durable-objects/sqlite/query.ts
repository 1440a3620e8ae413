/**
 * A client's read (`/query`), on the master or a replica: one statement,
 * which SQLite must compile as a read of user objects only, its result exact.
 */

import type { ApiValue } from "../../core/api-values";
import { type ConnectionCounters, freshCounters } from "../../core/connection-counters";
import { ApiError } from "../../core/errors";
import type { ResultFormat } from "../../core/protocol";
import { bindBody, guardedStatement } from "../../core/sql-params";
import { checkQuery, checkTouched } from "../../core/sql-policy";
import { explained, singleStatement } from "../../core/sql-statement";
import type { Exact } from "../../core/sql-value";
import { asObjects, ResultBudget, readExact, readRuntime } from "./read";
import type { SqlNode } from "./schema";
import { asSqlError } from "./sql-errors";
import { compile } from "./compile";

export type QueryRows =
  | { rows: Record<string, ApiValue>[] }
  | { columns: string[]; rows: ApiValue[][] };

export function runQuery(
  node: SqlNode,
  text: string,
  params: readonly Exact[],
  format: ResultFormat = "objects",
  counters: ConnectionCounters = freshCounters(),
): QueryRows {
  try {
    const statement = singleStatement(text);
    if (statement.syntax !== "query" && statement.syntax !== "explain") {
      throw new ApiError(
        "INVALID_SQL",
        "query accepts only reads (SELECT, WITH, VALUES, EXPLAIN): send writes to exec",
      );
    }
    // A read is a connection of its own unless it brings a stream's counters.
    const bound = bindBody(statement, params, counters);
    const inner =
      statement.syntax === "explain" ? bindBody(explained(statement), params, counters) : bound;
    const facts = compile(node, inner);
    checkTouched(facts, node.schema);
    checkQuery(facts);
    const budget = new ResultBudget();
    let result: ReturnType<typeof readExact>;
    if (statement.syntax === "query") result = readExact(node, bound, budget);
    else {
      const run = guardedStatement(bound);
      result = readRuntime(node.sql.exec(run.sql, ...run.params), budget);
    }
    return format === "arrays" ? result : { rows: asObjects(result) };
  } catch (error) {
    throw asSqlError(error);
  }
}
