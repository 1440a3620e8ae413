/**
 * What one statement of a dump is to an import (docs/operations.md, "Backups
 * and restore"), read from its tokens (sql-lexer.ts, SQLite's own rules):
 *
 * - the dump's own `PRAGMA foreign_keys=...`, `BEGIN TRANSACTION` and
 *   `COMMIT`: skipped (every batch is a transaction of its own, and Durable
 *   Object SQLite always enforces foreign keys);
 * - `DELETE FROM sqlite_sequence` and `INSERT INTO sqlite_sequence
 *   VALUES('t', n)`: the AUTOINCREMENT counters, which only the import may
 *   write (master/import-commit.ts);
 * - `INSERT INTO t(...) VALUES(...)` whose values are all literals: its rows,
 *   as exact values (so the import can bind them and send many rows in one
 *   statement, and a 1 MB blob is a parameter rather than 2 MB of SQL text);
 * - anything else: SQL, for the guard to run or refuse as it would in /exec.
 *
 * A literal becomes the value SQLite would read from it: an integer within 64
 * bits an INTEGER, beyond them a REAL; a decimal with a point or an exponent
 * a REAL (JS reads it as the nearest double, as SQLite does: 9.0e+999 is
 * Inf); '...' TEXT; X'...' a BLOB; CAST(X'...' AS TEXT) TEXT of those bytes;
 * replace('...','\n',char(10)) (sqlite3's TEXT with a newline) that TEXT.
 */
import { ApiError } from "./errors";
import { type Token, tokenize } from "./sql-lexer";
import { upper } from "./sql-statement";
import { type Exact, fromHex, INT64_MAX, INT64_MIN } from "./sql-value";

/** A value and where its literal is in the statement's text. */
export interface DumpValue {
  value: Exact;
  start: number;
  end: number;
}

export type DumpStatement =
  /** `transaction`: the dump's own BEGIN, or its COMMIT (END), which a dump cut short lacks. */
  | { kind: "skip"; transaction?: "begin" | "commit" }
  | { kind: "sequence-reset" }
  | { kind: "sequence"; rows: { name: string; seq: bigint }[] }
  | {
      kind: "insert";
      /** `INSERT INTO <table> (<columns>)`, its tokens as written: the part rows of one table share. */
      prefix: string;
      rows: DumpValue[][];
      sql: string;
    }
  | { kind: "sql"; sql: string };

const SKIPPED = new Set(["BEGIN", "COMMIT", "END"]);
const TRANSACTION_WORDS = new Set(["TRANSACTION", "DEFERRED", "IMMEDIATE", "EXCLUSIVE"]);

export function parseDumpStatement(sql: string): DumpStatement {
  const tokens = tokenize(sql).filter((t) => t.type !== "semicolon");
  const words = tokens.map(upper);
  const first = words[0];
  if (first === undefined) return { kind: "skip" };
  if (
    SKIPPED.has(first) &&
    words.slice(1).every((w) => w !== undefined && TRANSACTION_WORDS.has(w))
  ) {
    return { kind: "skip", transaction: first === "BEGIN" ? "begin" : "commit" };
  }
  if (first === "ROLLBACK") {
    throw new ApiError(
      "BAD_REQUEST",
      "the dump rolls back (sqlite3 writes ROLLBACK when the dump itself failed): it is not a complete dump",
    );
  }
  if (first === "PRAGMA") {
    const name = words[1] === "MAIN" && tokens[2]?.text === "." ? words[3] : words[1];
    if (name === "FOREIGN_KEYS") return { kind: "skip" };
    if (name === "WRITABLE_SCHEMA") {
      throw new ApiError(
        "BAD_REQUEST",
        "the dump writes sqlite_schema directly (sqlite3 .dump does so for virtual tables): load a dump " +
          "that creates each virtual table with CREATE VIRTUAL TABLE and inserts its rows, as this cluster's export does",
      );
    }
    return { kind: "sql", sql };
  }
  if (
    first === "DELETE" &&
    isSequenceTable(tokens, 2) &&
    tokens.length === 3 &&
    words[1] === "FROM"
  ) {
    return { kind: "sequence-reset" };
  }
  if (first === "INSERT" && words[1] === "INTO") {
    if (isSequenceTable(tokens, 2)) return { kind: "sequence", rows: sequenceRows(tokens) };
    const insert = parseInsert(sql, tokens);
    if (insert !== null) return insert;
  }
  return { kind: "sql", sql };
}

function isSequenceTable(tokens: readonly Token[], at: number): boolean {
  const token = tokens[at];
  const named = token?.type === "word" || token?.type === "quoted-ident";
  return named && token.value.toLowerCase() === "sqlite_sequence";
}

/** `INSERT INTO sqlite_sequence [(name, seq)] VALUES ('t', n), ...`: nothing else is accepted. */
function sequenceRows(tokens: readonly Token[]): { name: string; seq: bigint }[] {
  let at = 3;
  if (tokens[at]?.text === "(") {
    const names = [tokens[at + 1], tokens[at + 3]].map((t) => t?.value.toLowerCase());
    if (
      names[0] !== "name" ||
      tokens[at + 2]?.text !== "," ||
      names[1] !== "seq" ||
      tokens[at + 4]?.text !== ")"
    ) {
      throw sequenceShape();
    }
    at += 5;
  }
  if (upper(tokens[at]) !== "VALUES") throw sequenceShape();
  const tuples = parseTuples(tokens, at + 1);
  if (tuples === null) throw sequenceShape();
  return tuples.map((tuple) => {
    const [name, seq] = tuple.map((v) => v.value);
    if (tuple.length !== 2 || typeof name !== "string" || typeof seq !== "bigint")
      throw sequenceShape();
    return { name, seq };
  });
}

function sequenceShape(): ApiError {
  return new ApiError(
    "BAD_REQUEST",
    "an INSERT INTO sqlite_sequence must be of the form INSERT INTO sqlite_sequence VALUES('table', integer)",
  );
}

/** A plain `INSERT INTO t [(cols)] VALUES (literals), ...`, or null for anything else. */
function parseInsert(sql: string, tokens: readonly Token[]): DumpStatement | null {
  let at = 2;
  if (!isName(tokens[at])) return null;
  at++;
  if (tokens[at]?.text === "." && isName(tokens[at + 1])) at += 2;
  if (tokens[at]?.text === "(") {
    for (at++; ; at += 2) {
      if (!isName(tokens[at])) return null;
      const next = tokens[at + 1]?.text;
      if (next === ")") break;
      if (next !== ",") return null;
    }
    at += 2;
  }
  const values = tokens[at];
  if (upper(values) !== "VALUES" || values === undefined) return null;
  const rows = parseTuples(tokens, at + 1);
  if (rows === null) return null;
  const width = rows[0]?.length ?? 0;
  if (width === 0 || rows.some((row) => row.length !== width)) return null;
  // Rebuilt from the tokens: a comment between them (a `--` one would swallow what follows) is left out.
  const prefix = tokens
    .slice(0, at)
    .map((t) => t.text)
    .join(" ");
  return { kind: "insert", prefix, rows, sql };
}

function isName(token: Token | undefined): boolean {
  return token?.type === "word" || token?.type === "quoted-ident";
}

/** `(lit, ...), (lit, ...)` to the end of the tokens, or null if anything else is there. */
function parseTuples(tokens: readonly Token[], from: number): DumpValue[][] | null {
  const rows: DumpValue[][] = [];
  let at = from;
  for (;;) {
    if (tokens[at]?.text !== "(") return null;
    const row: DumpValue[] = [];
    for (at++; ; ) {
      const literal = parseLiteral(tokens, at);
      if (literal === null) return null;
      row.push(literal.value);
      at = literal.next;
      const next = tokens[at]?.text;
      at++;
      if (next === ")") break;
      if (next !== ",") return null;
    }
    rows.push(row);
    if (at === tokens.length) return rows;
    if (tokens[at]?.text !== ",") return null;
    at++;
  }
}

function parseLiteral(
  tokens: readonly Token[],
  at: number,
): { value: DumpValue; next: number } | null {
  const token = tokens[at];
  if (token === undefined) return null;
  const span = (value: Exact, last: Token, next: number) => ({
    value: { value, start: token.start, end: last.end },
    next,
  });
  if (upper(token) === "NULL") return span(null, token, at + 1);
  if (token.type === "string") return span(token.value, token, at + 1);
  if (token.type === "blob") return span(fromHex(token.value), token, at + 1);
  const sign =
    token.type === "punct" && (token.text === "-" || token.text === "+") ? token.text : "";
  const number = sign === "" ? token : tokens[at + 1];
  if (number?.type === "number") {
    const value = numberValue(sign, number.text);
    return value === undefined ? null : span(value, number, at + (sign === "" ? 1 : 2));
  }
  const replaced = parseReplace(tokens, at);
  if (replaced !== null) return span(replaced.text, replaced.last, replaced.next);
  // CAST(X'..' AS TEXT): TEXT holding exactly those bytes, valid UTF-8 or not.
  const [open, blob, as, type, close] = tokens.slice(at + 1, at + 6);
  if (
    upper(token) === "CAST" &&
    open?.text === "(" &&
    blob?.type === "blob" &&
    upper(as) === "AS" &&
    upper(type) === "TEXT" &&
    close?.text === ")"
  ) {
    return span({ textBytes: fromHex(blob.value) }, close, at + 6);
  }
  return null;
}

/**
 * `replace('a\nb','\n',char(10))`, nested for '\r' too: how `sqlite3 .dump`
 * writes TEXT holding a newline or carriage return. Its value is what
 * SQLite's replace() makes of it: every occurrence, left to right.
 */
function parseReplace(
  tokens: readonly Token[],
  at: number,
): { text: string; last: Token; next: number } | null {
  if (upper(tokens[at]) !== "REPLACE" || tokens[at + 1]?.text !== "(") return null;
  const inner = tokens[at + 2];
  const nested = parseReplace(tokens, at + 2);
  const text = nested?.text ?? (inner?.type === "string" ? inner.value : null);
  if (text === null) return null;
  let i = nested?.next ?? at + 3;
  const [comma1, from, comma2, char, open, code, close, end] = tokens.slice(i, i + 8);
  if (comma1?.text !== "," || from?.type !== "string" || comma2?.text !== ",") return null;
  if (upper(char) !== "CHAR" || open?.text !== "(" || code?.type !== "number") return null;
  if (!/^\d+$/.test(code.text) || close?.text !== ")" || end?.text !== ")") return null;
  const point = Number(code.text);
  if (from.value === "" || point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff)) return null;
  i += 8;
  return { text: text.replaceAll(from.value, String.fromCodePoint(point)), last: end, next: i };
}

/** A decimal literal's value as SQLite reads it; undefined for hex or digit separators. */
function numberValue(sign: string, text: string): Exact | undefined {
  if (/^\d+$/.test(text)) {
    const value = BigInt(`${sign}${text}`);
    if (value >= INT64_MIN && value <= INT64_MAX) return value;
    return Number.parseFloat(`${sign}${text}`);
  }
  if (/^(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) return Number.parseFloat(`${sign}${text}`);
  return undefined;
}
