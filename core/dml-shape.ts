/**
 * The parts of a DML statement's text that RETURNING and the connection
 * counters need, read from its tokens: its WITH clause, its verb and target,
 * and its RETURNING clause.
 */
import type { Token } from "./sql-lexer";
import { upper } from "./sql-statement";

export interface Item {
  /** Token indices, inclusive. */
  first: number;
  last: number;
  star: boolean;
}

export interface ReturningClause {
  /** Index of the RETURNING keyword. */
  keyword: number;
  items: Item[];
}

export interface DmlShape {
  /** Index of INSERT, REPLACE, UPDATE or DELETE: what comes before it is the WITH clause. */
  verb: number;
  /** The verb's word, upper case. */
  kind: "INSERT" | "REPLACE" | "UPDATE" | "DELETE";
  /** Indices of the target's name tokens (`main`, `.`, `t`, or just `t`). */
  target: { first: number; last: number };
  returning: ReturningClause | null;
}

const isPunct = (token: Token | undefined, text: string) =>
  token?.type === "punct" && token.text === text;

const isName = (token: Token | undefined) =>
  token?.type === "word" || token?.type === "quoted-ident" || token?.type === "string";

/** Index after the parenthesised group opening at `open`, or -1 if it never closes. */
function afterGroup(tokens: readonly Token[], open: number): number {
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    if (isPunct(tokens[i], "(")) depth++;
    else if (isPunct(tokens[i], ")") && --depth === 0) return i + 1;
  }
  return -1;
}

/**
 * Index of the first token after a leading `WITH [RECURSIVE] name [(cols)]
 * AS [[NOT] MATERIALIZED] (...), ...` (0 without one), or -1 when it does not
 * parse so: a CTE may be named like a verb (`WITH replace AS ...`), so the
 * clause is walked, not searched.
 */
function afterWith(tokens: readonly Token[]): number {
  if (upper(tokens[0]) !== "WITH") return 0;
  let i = upper(tokens[1]) === "RECURSIVE" ? 2 : 1;
  for (;;) {
    if (!isName(tokens[i])) return -1;
    i++;
    if (isPunct(tokens[i], "(")) i = afterGroup(tokens, i);
    if (i < 0 || upper(tokens[i]) !== "AS") return -1;
    i++;
    if (upper(tokens[i]) === "NOT") i++;
    if (upper(tokens[i]) === "MATERIALIZED") i++;
    if (!isPunct(tokens[i], "(")) return -1;
    i = afterGroup(tokens, i);
    if (i < 0) return -1;
    if (!isPunct(tokens[i], ",")) return i;
    i++;
  }
}

const VERBS = new Set(["INSERT", "REPLACE", "UPDATE", "DELETE"]);

/** The statement's shape, or null when it is not a DML statement this can read. */
export function dmlShape(tokens: readonly Token[]): DmlShape | null {
  const verb = afterWith(tokens);
  const kind = upper(tokens[verb]);
  if (verb < 0 || kind === undefined || !VERBS.has(kind)) return null;
  let at = verb + 1;
  if (upper(tokens[at]) === "OR") at += 2;
  if (upper(tokens[at]) === "INTO" || upper(tokens[at]) === "FROM") at++;
  if (!isName(tokens[at])) return null;
  const first = at;
  if (isPunct(tokens[at + 1], ".") && isName(tokens[at + 2])) at += 2;
  return {
    verb,
    kind: kind as DmlShape["kind"],
    target: { first, last: at },
    returning: returningClause(tokens, at + 1),
  };
}

/**
 * The RETURNING clause at or after token `from`. RETURNING is a reserved word
 * (SQLite never reads it as a name), no other clause of a DML statement holds
 * it outside parentheses, and the clause ends the statement.
 */
function returningClause(tokens: readonly Token[], from: number): ReturningClause | null {
  let depth = 0;
  let keyword = -1;
  for (let i = from; i < tokens.length; i++) {
    const token = tokens[i];
    if (isPunct(token, "(")) depth++;
    else if (isPunct(token, ")")) depth--;
    else if (depth === 0 && token?.type === "word" && upper(token) === "RETURNING") {
      keyword = i;
      break;
    }
  }
  if (keyword < 0) return null;
  const items: Item[] = [];
  let first = keyword + 1;
  depth = 0;
  for (let i = first; i <= tokens.length; i++) {
    const token = tokens[i];
    if (isPunct(token, "(")) depth++;
    else if (isPunct(token, ")")) depth--;
    else if (i === tokens.length || (depth === 0 && isPunct(token, ","))) {
      if (i === first) return null; // an empty item: SQLite's syntax error, left to it
      const star = i === first + 1 && isPunct(tokens[first], "*");
      items.push({ first, last: i - 1, star });
      first = i + 1;
    }
  }
  return { keyword, items };
}
