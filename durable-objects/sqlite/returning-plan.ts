/**
 * Whether a write's RETURNING rows can be read exactly, and how: the
 * statement with its clause rewritten (core/returning.ts) and the names
 * SQLite gives the clause's columns (names.ts). The statement as sent is
 * compiled first, so its errors are SQLite's for what was sent; if SQLite
 * then refuses the rewritten text, the statement runs as sent and its rows
 * come from the runtime.
 */
import { dmlShape } from "../../core/dml-shape";
import { exactReturning } from "../../core/returning";
import type { BoundBody } from "../../core/sql-params";
import { compile } from "./compile";
import { returningNames, starColumns } from "./names";
import type { SqlNode } from "./schema";

export interface ReturningPlan {
  /** The statement to run: its RETURNING clause one column of cells. */
  bound: BoundBody;
  /** The clause's column names, as SQLite names them. */
  names: string[];
}

export function planReturning(node: SqlNode, prepared: BoundBody): ReturningPlan | null {
  // DML, or WITH ... DML (which reads as a query until its verb).
  const syntax = prepared.statement.syntax;
  if (syntax !== "dml" && syntax !== "query") return null;
  const shape = dmlShape(prepared.statement.tokens);
  if (shape === null || shape.returning === null) return null;
  // The statement as sent first: what SQLite refuses there (an aggregate in
  // RETURNING, a window function) it would accept in the rewrite's subquery.
  compile(node, prepared);
  const rewritten = exactReturning(prepared, shape, () => starColumns(node, prepared, shape));
  if (rewritten === null) return null;
  const names = returningNames(node, prepared, shape);
  if (names === null || names.length !== rewritten.width) return null;
  const bound = { ...prepared, body: rewritten.body };
  try {
    compile(node, bound);
  } catch {
    return null;
  }
  return { bound, names };
}
