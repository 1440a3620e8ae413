/**
 * SQLite's view of a bound statement: EXPLAIN, with the same bindings, read
 * by core/sql-program.ts into the facts the guard judges.
 */
import { type BoundBody, guardedStatement, sentOffset } from "../../core/sql-params";
import { analyzeProgram, type ProgramFacts } from "../../core/sql-program";
import type { SqlNode } from "./schema";

/**
 * The same text on the same schema compiles to the same program, so the
 * facts are kept per text until the schema changes (Schema.invalidate clears
 * them). An error is SQLite's, its offset in the SQL as sent.
 */
export function compile(node: SqlNode, bound: BoundBody): ProgramFacts {
  const statement = guardedStatement(bound);
  const known = node.schema.facts(statement.sql);
  if (known !== undefined) return known;
  let facts: ProgramFacts;
  try {
    facts = analyzeProgram([
      ...node.sql.exec(`EXPLAIN ${statement.sql}`, ...statement.params).raw(),
    ]);
  } catch (error) {
    throw atSentOffset(error, bound, "EXPLAIN ".length);
  }
  node.schema.rememberFacts(statement.sql, facts);
  return facts;
}

/** SQLite's error, its offset ("at offset N") moved to the SQL as sent. */
function atSentOffset(error: unknown, bound: BoundBody, prefix: number): unknown {
  if (!(error instanceof Error)) return error;
  const match = /at offset (\d+)/.exec(error.message);
  if (match === null) return error;
  const sent = sentOffset(bound, Number(match[1]), prefix);
  return new Error(error.message.replace(match[0], `at offset ${sent}`), { cause: error });
}
