/**
 * One statement per SQL string, and what kind of statement it is by its first
 * word (SQLite's grammar decides the kind from it: `cmd ::= SELECT | INSERT
 * ...`). Whether a statement reads or writes, and what it touches, is decided
 * from SQLite's compiled program (sql-program.ts), not here.
 */
import { ApiError } from "./errors";
import { type Token, tokenize } from "./sql-lexer";

/**
 * `query`: SELECT, VALUES, WITH (any of them may still write: WITH ... INSERT);
 * `dml`: INSERT, REPLACE, UPDATE, DELETE; `ddl`: CREATE, DROP, ALTER;
 * `explain`: EXPLAIN [QUERY PLAN] of another statement.
 */
export type Syntax = "query" | "dml" | "ddl" | "explain";

export interface SingleStatement {
  sql: string;
  tokens: Token[];
  /** Where the statement's text ends: at its `;`, or at the end of the string. */
  end: number;
  syntax: Syntax;
}

export function upper(token: Token | undefined): string | undefined {
  return token?.type === "word" ? token.value.toUpperCase() : undefined;
}

export function isPunct(token: Token | undefined, text: string): boolean {
  return token?.type === "punct" && token.text === text;
}

export function isCreateTrigger(tokens: readonly Token[]): boolean {
  const [first, second, third] = tokens.slice(0, 3).map(upper);
  if (first !== "CREATE") return false;
  return (
    second === "TRIGGER" || ((second === "TEMP" || second === "TEMPORARY") && third === "TRIGGER")
  );
}

/**
 * A CREATE TRIGGER body holds `;`-terminated statements up to its END. CASE ...
 * END pairs inside do not close it. END can also be an identifier to SQLite
 * (it falls back to ID), so this END may come before SQLite's: then the text
 * after it does not end here and is refused as a second statement. It never
 * comes after SQLite's, because CASE is reserved.
 */
export function triggerEnd(tokens: readonly Token[]): number {
  if (!isCreateTrigger(tokens)) return 0;
  let openCases = 0;
  for (const [i, token] of tokens.entries()) {
    const word = upper(token);
    if (word === "CASE") openCases++;
    else if (word === "END" && openCases > 0) openCases--;
    else if (word === "END") return i + 1;
  }
  throw new ApiError("INVALID_SQL", "CREATE TRIGGER body has no END");
}

const FIRST_WORDS: Readonly<Record<string, Syntax>> = {
  SELECT: "query",
  VALUES: "query",
  WITH: "query",
  INSERT: "dml",
  REPLACE: "dml",
  UPDATE: "dml",
  DELETE: "dml",
  CREATE: "ddl",
  DROP: "ddl",
  ALTER: "ddl",
  EXPLAIN: "explain",
};

const IN_TRANSACTION = "each request is already one transaction";
const NOT_REPLICATED = "only the cluster's one database is replicated";
const MAINTENANCE = "storage maintenance is the service's job and is not replicated";

/** Statements the service refuses, and why, for the error message and the docs. */
export const REFUSED_STATEMENTS: Readonly<Record<string, string>> = {
  BEGIN: IN_TRANSACTION,
  COMMIT: IN_TRANSACTION,
  END: IN_TRANSACTION,
  ROLLBACK: IN_TRANSACTION,
  SAVEPOINT: IN_TRANSACTION,
  RELEASE: IN_TRANSACTION,
  ATTACH: NOT_REPLICATED,
  DETACH: NOT_REPLICATED,
  PRAGMA: "pragmas change settings outside the replicated log",
  VACUUM: MAINTENANCE,
  ANALYZE: MAINTENANCE,
  REINDEX: MAINTENANCE,
};

function syntaxOf(tokens: readonly Token[]): Syntax {
  const first = tokens[0];
  const word = upper(first);
  if (word === undefined) {
    throw new ApiError("INVALID_SQL", `a statement cannot start with ${first?.text ?? "nothing"}`);
  }
  const syntax = FIRST_WORDS[word];
  if (syntax !== undefined) return syntax;
  const why = REFUSED_STATEMENTS[word];
  if (why !== undefined) {
    throw new ApiError("INVALID_SQL", `${word} statements are not allowed: ${why}`);
  }
  throw new ApiError(
    "INVALID_SQL",
    `unsupported statement ${word}: expected SELECT, WITH, VALUES, EXPLAIN, INSERT, UPDATE, ` +
      "DELETE, REPLACE, CREATE, DROP or ALTER",
  );
}

/** Splits off the one statement; anything but blanks and comments after its `;` is refused. */
export function singleStatement(sql: string): SingleStatement {
  const known = parsed.get(sql);
  if (known !== undefined) return known;
  const statement = parseSingle(sql);
  if (sql.length > PARSED_MAX_CHARS) return statement;
  if (parsed.size >= PARSED_KEPT) parsed.delete(parsed.keys().next().value ?? "");
  parsed.set(sql, statement);
  return statement;
}

/**
 * Statements read before, by text: an application sends the same few texts
 * again and again, and reading one is most of what the guard costs once its
 * program is known. A statement is a pure function of its text and is never
 * changed after it is made; texts that fail to read are not kept.
 */
const parsed = new Map<string, SingleStatement>();
/** At most this many texts of at most this length: a few MB of tokens at worst. */
const PARSED_KEPT = 256;
const PARSED_MAX_CHARS = 1_000;

function parseSingle(sql: string): SingleStatement {
  const all = tokenize(sql);
  const from = triggerEnd(all);
  const semicolon = all.findIndex((token, i) => i >= from && token.type === "semicolon");
  if (semicolon >= 0 && semicolon < all.length - 1) {
    throw new ApiError(
      "INVALID_SQL",
      "one statement per entry: send several statements as several entries of one request",
    );
  }
  const tokens = semicolon < 0 ? all : all.slice(0, semicolon);
  if (tokens.length === 0) throw new ApiError("INVALID_SQL", "empty SQL statement");
  const end = all[semicolon]?.start ?? sql.length;
  return { sql, tokens, end, syntax: syntaxOf(tokens) };
}

/** The statement an EXPLAIN [QUERY PLAN] explains, as a statement of its own. */
export function explained(statement: SingleStatement): SingleStatement {
  const queryPlan = upper(statement.tokens[1]) === "QUERY" && upper(statement.tokens[2]) === "PLAN";
  const inner = statement.tokens.slice(queryPlan ? 3 : 1);
  const first = inner[0];
  if (first === undefined) throw new ApiError("INVALID_SQL", "EXPLAIN of nothing");
  const syntax = syntaxOf(inner);
  if (syntax === "explain") throw new ApiError("INVALID_SQL", "EXPLAIN of an EXPLAIN");
  return { sql: statement.sql, tokens: inner, end: statement.end, syntax };
}
