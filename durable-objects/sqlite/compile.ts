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
    throw atSentOffset(error, bound, `EXPLAIN ${statement.sql}`);
  }
  node.schema.rememberFacts(statement.sql, facts);
  return facts;
}

/**
 * SQLite's error, its offset ("at offset N") moved to the SQL as sent. SQLite
 * counts bytes of UTF-8; the mapping works on characters of the text it ran.
 */
function atSentOffset(error: unknown, bound: BoundBody, ran: string): unknown {
  if (!(error instanceof Error)) return error;
  const match = /at offset (\d+)/.exec(error.message);
  if (match === null) return error;
  const prefix = ran.length - guardedStatement(bound).sql.length;
  const chars = charIndex(ran, Number(match[1]));
  const sent = sentOffset(bound, chars, prefix);
  const bytes = utf8.encode(bound.statement.sql.slice(0, sent)).length;
  return new Error(error.message.replace(match[0], `at offset ${bytes}`), { cause: error });
}

const utf8 = new TextEncoder();

/** The index in `text` of the character at UTF-8 byte `bytes`. */
function charIndex(text: string, bytes: number): number {
  let count = 0;
  let i = 0;
  while (i < text.length && count < bytes) {
    const code = text.codePointAt(i) ?? 0;
    count += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    i += code >= 0x10000 ? 2 : 1;
  }
  return i;
}
