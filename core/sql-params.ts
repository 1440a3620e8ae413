/**
 * Binding exact values to a statement. The runtime binds every JS number as
 * a REAL and cannot bind a bigint, so an INTEGER is bound as its decimal text
 * inside `CAST(?N AS INTEGER)`, and TEXT that is not valid UTF-8 as bytes inside
 * `CAST(?N AS TEXT)`. Every parameter is renumbered explicitly as SQLite
 * numbered it (`?`, `?NNN`, `:name`, `@name`, `$name`, `#name`, TCL forms).
 *
 * Then one more parameter, ?{n+1}, goes into a CTE in front of the statement.
 * workerd runs every statement of a multi-statement string, but refuses, before
 * running any, a string whose first statement has parameters and is not the
 * last: so if SQLite sees a second statement where the tokenizer saw none, the
 * platform refuses the text instead of running it. DDL cannot take a CTE or a
 * parameter; its one-statement check rests on the tokenizer alone.
 */
import { type ConnectionCounters, counterCalls, counterLiteral } from "./connection-counters";
import { ApiError } from "./errors";
import type { Token } from "./sql-lexer";
import { type SingleStatement, upper } from "./sql-statement";
import { type Exact, decodeCell, encodeCell, isTextBytes } from "./sql-value";

/** What SqlStorage.exec binds. */
export type Bindable = number | string | ArrayBuffer | null;

export interface BoundStatement {
  /** The text to run: parameters renumbered, the guard CTE in front (not for DDL). */
  sql: string;
  params: Bindable[];
}

/** SQLite's own limit on a parameter's number on Durable Objects; the guard takes one. */
export const MAX_PARAMETER_NUMBER = 100;
export const MAX_USER_PARAMS = MAX_PARAMETER_NUMBER - 1;
export const GUARD_CTE = "_repl_guard";

/**
 * 1-based parameter numbers as SQLite assigns them: `?` takes the next number,
 * `?NNN` takes NNN, a name takes the next number at its first use and keeps it.
 */
export function parameterNumbers(tokens: readonly Token[]): Map<number, number> {
  const numbers = new Map<number, number>();
  const named = new Map<string, number>();
  let highest = 0;
  tokens.forEach((token, i) => {
    if (token.type !== "param") return;
    let number: number | undefined;
    if (token.text === "?") number = highest + 1;
    else if (/^\?\d+$/.test(token.text)) {
      number = Number(token.text.slice(1));
      if (number < 1 || number > MAX_PARAMETER_NUMBER) {
        throw new ApiError(
          "INVALID_SQL",
          `variable number must be between ?1 and ?${MAX_USER_PARAMS}: ${token.text}`,
        );
      }
    } else {
      number = named.get(token.text) ?? highest + 1;
      named.set(token.text, number);
    }
    highest = Math.max(highest, number);
    numbers.set(i, number);
  });
  return numbers;
}

function toBindable(value: Exact): { param: Bindable; cast?: "INTEGER" | "TEXT" } {
  if (value === null || typeof value === "number" || typeof value === "string") {
    return { param: value };
  }
  if (typeof value === "bigint") return { param: value.toString(), cast: "INTEGER" };
  if (isTextBytes(value)) return { param: copyBuffer(value.textBytes), cast: "TEXT" };
  return { param: copyBuffer(value) };
}

function copyBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.slice().buffer;
}

/** A span of the body that stands for other text of the statement as sent. */
export interface Rewrite {
  /** Offsets into the body. */
  start: number;
  end: number;
  /** What the client wrote there. */
  original: string;
}

/** A statement's text with its parameters renumbered, and what to bind. */
export interface BoundBody {
  statement: SingleStatement;
  /**
   * From the statement's first token to its end, parameters rewritten (and
   * calls of the connection counters' functions bound to the client's own).
   */
  body: string;
  /** The user's values, in parameter order. */
  params: Bindable[];
  /** The guard parameter's number (one past the user's). */
  guard: number;
  /** Where the body differs from the statement as sent, in order. */
  rewrites: Rewrite[];
  /** Each token's offsets in the body (a rewritten call's tokens share its span). */
  starts: number[];
  ends: number[];
}

/**
 * Binds a statement's parameters. With `counters`, calls of
 * last_insert_rowid(), changes() and total_changes() outside DDL become the
 * client's own values (core/connection-counters.ts).
 */
export function bindBody(
  statement: SingleStatement,
  values: readonly Exact[],
  counters?: ConnectionCounters,
): BoundBody {
  const { tokens, sql } = statement;
  const numbers = parameterNumbers(tokens);
  const count = Math.max(0, ...numbers.values());
  if (count !== values.length) {
    throw new ApiError(
      "INVALID_SQL",
      `the statement has ${count} parameter${count === 1 ? "" : "s"} but ${values.length} ${values.length === 1 ? "was" : "were"} given`,
    );
  }
  if (count > MAX_USER_PARAMS) {
    throw new ApiError("INVALID_SQL", `at most ${MAX_USER_PARAMS} parameters per statement`);
  }
  const bound = values.map(toBindable);
  const calls =
    counters === undefined || statement.syntax === "ddl" ? new Map() : counterCalls(tokens);
  const rewrites: Rewrite[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  let out = "";
  let cursor = tokens[0]?.start ?? 0;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as Token;
    const number = numbers.get(i);
    const call = calls.get(i);
    let text: string;
    let last = i;
    if (number !== undefined) {
      const cast = bound[number - 1]?.cast;
      text = cast === undefined ? `?${number}` : `CAST(?${number} AS ${cast})`;
    } else if (call !== undefined && counters !== undefined) {
      text = counterLiteral(counters, call.fn);
      last = call.last;
    } else {
      out += sql.slice(cursor, token.end);
      cursor = token.end;
      starts.push(out.length - token.text.length);
      ends.push(out.length);
      continue;
    }
    out += sql.slice(cursor, token.start);
    const start = out.length;
    out += text;
    const end = (tokens[last] as Token).end;
    rewrites.push({ start, end: out.length, original: sql.slice(token.start, end) });
    for (let j = i; j <= last; j++) {
      starts.push(start);
      ends.push(out.length);
    }
    cursor = end;
    i = last;
  }
  // The body ends with its last token: a comment after it (`-- ...`, an unclosed
  // `/*`) would swallow whatever the body is wrapped in.
  if (tokens.length === 0) out = sql.slice(0, statement.end);
  return {
    statement,
    body: out,
    params: bound.map((b) => b.param),
    guard: count + 1,
    rewrites,
    starts,
    ends,
  };
}

/** `WITH _repl_guard(x) AS (SELECT ?G)`: the CTE that carries the guard parameter. */
export function guardCte(guard: number): string {
  return `${GUARD_CTE}(x) AS (SELECT ?${guard})`;
}

/** The statement to run: the body, with the guard CTE in front unless it is DDL. */
export function guardedStatement(bound: BoundBody): BoundStatement {
  if (bound.statement.syntax === "ddl") return { sql: bound.body, params: bound.params };
  return {
    sql: withGuard(bound.body, bound.statement.tokens, bound.guard),
    params: [...bound.params, null],
  };
}

export function bindStatement(
  statement: SingleStatement,
  values: readonly Exact[],
): BoundStatement {
  return guardedStatement(bindBody(statement, values));
}

/**
 * Where the guard CTE goes in the body: merged into the statement's own WITH
 * when it has one, after EXPLAIN [QUERY PLAN] when it explains. The keywords
 * looked at come before any parameter, so their offsets in the body are those
 * in the statement less its first token's.
 */
function guardInsertion(
  tokens: readonly Token[],
  guard: number,
): { at: number; text: string } | null {
  const start = tokens[0]?.start ?? 0;
  let at = 0;
  if (upper(tokens[0]) === "EXPLAIN") {
    at = upper(tokens[1]) === "QUERY" ? 3 : 1;
  }
  const cte = guardCte(guard);
  const first = tokens[at];
  if (first === undefined) return null;
  const offset = (token: Token) => token.start - start;
  if (upper(first) === "WITH") {
    const recursive = upper(tokens[at + 1]) === "RECURSIVE";
    const last = tokens[at + (recursive ? 1 : 0)] ?? first;
    return { at: offset(last) + last.text.length, text: ` ${cte},` };
  }
  return { at: offset(first), text: `WITH ${cte} ` };
}

function withGuard(body: string, tokens: readonly Token[], guard: number): string {
  const insertion = guardInsertion(tokens, guard);
  if (insertion === null) return body;
  return body.slice(0, insertion.at) + insertion.text + body.slice(insertion.at);
}

/**
 * SQLite reports where in the text it ran an error lies ("at offset N"); the
 * text it ran is the guarded body, so the offset is mapped back to the SQL as
 * sent (`prefix`: characters in front of the guarded statement, EXPLAIN's).
 */
export function sentOffset(bound: BoundBody, offset: number, prefix = 0): number {
  let pos = offset - prefix;
  const insertion =
    bound.statement.syntax === "ddl" ? null : guardInsertion(bound.statement.tokens, bound.guard);
  if (insertion !== null && pos > insertion.at) {
    pos = Math.max(insertion.at, pos - insertion.text.length);
  }
  let shift = 0;
  for (const r of bound.rewrites) {
    if (r.start >= pos) break;
    if (r.end > pos) {
      pos = r.start;
      break;
    }
    shift += r.end - r.start - r.original.length;
  }
  return Math.max(0, pos - shift) + (bound.statement.tokens[0]?.start ?? 0);
}

/** A bound parameter as a cell, to replay the statement with the same bindings. */
export function encodeBindable(param: Bindable): string {
  return encodeCell(param instanceof ArrayBuffer ? new Uint8Array(param) : param);
}

export function decodeBindable(cell: string): Bindable {
  const value = decodeCell(cell);
  if (value instanceof Uint8Array) return value.slice().buffer;
  if (typeof value === "bigint" || isTextBytes(value))
    throw new Error(`not a bound parameter: ${cell}`);
  return value;
}
