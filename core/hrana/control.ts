/**
 * The statements a libSQL client sends that are not SQL for SQLite here:
 * transaction control, which the endpoint carries out itself (a Durable
 * Object cannot hold a SQLite transaction open across requests), and
 * `PRAGMA foreign_keys`, which Durable Object SQLite ignores (foreign keys
 * are always enforced) and the endpoint honours as far as it can. And the
 * split of a `sequence` into its statements.
 */
import { ApiError } from "../errors";
import { type Token, tokenize } from "../sql-lexer";
import { triggerEnd, upper } from "../sql-statement";

export type BeginMode = "deferred" | "immediate" | "exclusive" | "readonly";

export type Control =
  | { kind: "begin"; mode: BeginMode }
  | { kind: "commit" }
  | { kind: "rollback" }
  | { kind: "foreign-keys"; on: boolean }
  | { kind: "foreign-keys-query" };

const words = (tokens: readonly Token[]) => tokens.map((t) => upper(t) ?? t.text.toUpperCase());

/** The control a statement is, or null for SQL to run. */
export function controlOf(sql: string): Control | null {
  let tokens: Token[];
  try {
    tokens = tokenize(sql);
  } catch {
    return null;
  }
  while (tokens.length > 0 && tokens[tokens.length - 1]?.type === "semicolon") tokens.pop();
  const w = words(tokens);
  const first = w[0];
  if (first === "BEGIN") return begin(w.slice(1));
  if (first === "COMMIT" || first === "END") {
    const rest = w.slice(1);
    if (rest.length === 0 || (rest.length === 1 && rest[0] === "TRANSACTION")) {
      return { kind: "commit" };
    }
    return null;
  }
  if (first === "ROLLBACK") {
    const rest = w.slice(1);
    if (rest.length === 0 || (rest.length === 1 && rest[0] === "TRANSACTION")) {
      return { kind: "rollback" };
    }
    return null;
  }
  if (first === "PRAGMA") return foreignKeys(tokens.slice(1));
  return null;
}

function begin(rest: string[]): Control | null {
  const mode = rest[0];
  let kind: BeginMode = "deferred";
  let at = 0;
  if (mode === "DEFERRED" || mode === "IMMEDIATE" || mode === "EXCLUSIVE") {
    kind = mode.toLowerCase() as BeginMode;
    at = 1;
  }
  if (rest[at] === "TRANSACTION") at++;
  // libSQL's own `BEGIN TRANSACTION READONLY` (what `@libsql/client` sends for "read").
  if (rest[at] === "READONLY" && kind === "deferred") {
    kind = "readonly";
    at++;
  }
  return at === rest.length ? { kind: "begin", mode: kind } : null;
}

/** `PRAGMA foreign_keys`, `= ON|OFF|1|0|TRUE|FALSE|YES|NO`, `(…)`; any other pragma is SQL. */
function foreignKeys(tokens: readonly Token[]): Control | null {
  let rest = [...tokens];
  if (rest[1]?.text === "." && upper(rest[0]) === "MAIN") rest = rest.slice(2);
  if (rest[0]?.value.toLowerCase() !== "foreign_keys") return null;
  rest = rest.slice(1);
  if (rest.length === 0) return { kind: "foreign-keys-query" };
  let value: Token | undefined;
  if (rest[0]?.text === "=" && rest.length === 2) value = rest[1];
  else if (rest[0]?.text === "(" && rest[2]?.text === ")" && rest.length === 3) value = rest[1];
  const text = value?.value.toUpperCase();
  if (text === "ON" || text === "1" || text === "TRUE" || text === "YES") {
    return { kind: "foreign-keys", on: true };
  }
  if (text === "OFF" || text === "0" || text === "FALSE" || text === "NO") {
    return { kind: "foreign-keys", on: false };
  }
  return null;
}

/**
 * The statements of a `sequence`, split where SQLite would end each: at a
 * `;` outside strings, comments and CREATE TRIGGER bodies. Blank statements
 * (`;;`, a trailing comment) are dropped, as sqlite3_exec skips them.
 */
export function splitStatements(sql: string): string[] {
  const tokens = tokenize(sql);
  const out: string[] = [];
  let from = 0;
  while (from < tokens.length) {
    const rest = tokens.slice(from);
    if (rest[0]?.type === "semicolon") {
      from++;
      continue;
    }
    const bodyEnd = triggerEnd(rest);
    const semicolon = rest.findIndex((t, i) => i >= bodyEnd && t.type === "semicolon");
    const last = semicolon < 0 ? rest.length - 1 : semicolon - 1;
    const start = rest[0]?.start ?? 0;
    const end = rest[last]?.end ?? start;
    out.push(sql.slice(start, end));
    from += semicolon < 0 ? rest.length : semicolon + 1;
  }
  if (out.length === 0) throw new ApiError("INVALID_SQL", "the sequence holds no statement");
  return out;
}
