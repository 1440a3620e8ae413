/**
 * A small SQLite tokenizer: just enough structure for the statement guard to
 * find statement boundaries, names and function calls without a full parser.
 * It follows SQLite's own lexical rules (tokenize.c) where they matter to the
 * guard: "double quoted", `backtick` and [bracket] names are identifiers, and
 * comments vanish, so a name or call the guard sees is the one SQLite sees.
 */
import { ApiError } from "./errors";

export type TokenType =
  | "word"
  | "quoted-ident"
  | "string"
  | "blob"
  | "number"
  | "param"
  | "punct"
  | "semicolon";

export interface Token {
  type: TokenType;
  /** The source text of the token, exactly as written. */
  text: string;
  /** Unescaped name or string content; the hex digits of a blob; otherwise `text`. */
  value: string;
  /** Offsets into the SQL string: `sql.slice(start, end) === text`. */
  start: number;
  end: number;
}

/** Operators SQLite reads as one token; anything else is a one-character punct. */
const MULTI_CHAR_PUNCT = ["->>", "||", "<=", ">=", "<>", "!=", "==", "<<", ">>", "->"];

export function tokenize(sql: string): Token[] {
  // SQLite stops reading at a NUL, so the text past it would be read by the guard
  // alone; the runtime then fails on what SQLite left ("did not contain a statement").
  const nul = sql.indexOf("\0");
  if (nul >= 0) throw invalid(`SQL text contains a NUL character at offset ${nul}`);
  const tokens: Token[] = [];
  let pos = skipSpaceAndComments(sql, 0);
  while (pos < sql.length) {
    const token = readToken(sql, pos);
    tokens.push(token);
    pos = skipSpaceAndComments(sql, token.end);
  }
  return tokens;
}

function invalid(message: string): ApiError {
  return new ApiError("INVALID_SQL", message);
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

function isHexDigit(code: number): boolean {
  return isDigit(code) || (code >= 65 && code <= 70) || (code >= 97 && code <= 102);
}

/** SQLite treats every non-ASCII code unit as an identifier character. */
function isIdStart(code: number): boolean {
  return (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95 || code >= 0x80;
}

function isIdChar(code: number): boolean {
  return isIdStart(code) || isDigit(code) || code === 36;
}

/** The whitespace set of SQLite's sqlite3Isspace: space, \t, \n, \v, \f, \r. */
function isSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13);
}

function skipSpaceAndComments(sql: string, from: number): number {
  let pos = from;
  for (;;) {
    while (isSpace(sql.charCodeAt(pos))) pos++;
    if (sql.startsWith("--", pos)) {
      const newline = sql.indexOf("\n", pos + 2);
      pos = newline < 0 ? sql.length : newline + 1;
    } else if (sql.startsWith("/*", pos)) {
      const close = sql.indexOf("*/", pos + 2);
      if (close < 0) throw invalid(`unterminated /* comment starting at offset ${pos}`);
      pos = close + 2;
    } else {
      return pos;
    }
  }
}

function readToken(sql: string, start: number): Token {
  const c = sql.charAt(start);
  const code = sql.charCodeAt(start);
  if (c === "'") return readQuoted(sql, start, "'", "string");
  if (c === '"' || c === "`") return readQuoted(sql, start, c, "quoted-ident");
  if (c === "[") return readBracketed(sql, start);
  if ((c === "x" || c === "X") && sql.charAt(start + 1) === "'") return readBlob(sql, start);
  if (isDigit(code) || (c === "." && isDigit(sql.charCodeAt(start + 1)))) {
    return readNumber(sql, start);
  }
  if (isIdStart(code)) return make(sql, "word", start, skipWhile(sql, start, isIdChar));
  if (c === "?") return make(sql, "param", start, skipWhile(sql, start + 1, isDigit));
  if ((c === ":" || c === "@" || c === "$") && isIdChar(sql.charCodeAt(start + 1))) {
    return make(sql, "param", start, skipWhile(sql, start + 1, isIdChar));
  }
  if (c === ";") return make(sql, "semicolon", start, start + 1);
  const op = MULTI_CHAR_PUNCT.find((candidate) => sql.startsWith(candidate, start));
  return make(sql, "punct", start, start + (op?.length ?? 1));
}

function make(sql: string, type: TokenType, start: number, end: number, value?: string): Token {
  const text = sql.slice(start, end);
  return { type, text, value: value ?? text, start, end };
}

function skipWhile(sql: string, from: number, accept: (code: number) => boolean): number {
  let pos = from;
  while (pos < sql.length && accept(sql.charCodeAt(pos))) pos++;
  return pos;
}

/** Quotes inside are escaped by doubling them, in strings and identifiers alike. */
function readQuoted(sql: string, start: number, quote: string, type: TokenType): Token {
  let pos = start + 1;
  for (;;) {
    const close = sql.indexOf(quote, pos);
    if (close < 0) {
      const what = type === "string" ? "string literal" : "quoted identifier";
      throw invalid(`unterminated ${what} starting at offset ${start}`);
    }
    if (sql.charAt(close + 1) !== quote) {
      const value = sql.slice(start + 1, close).replaceAll(quote + quote, quote);
      return make(sql, type, start, close + 1, value);
    }
    pos = close + 2;
  }
}

/** [name] has no escape: it ends at the first ]. */
function readBracketed(sql: string, start: number): Token {
  const close = sql.indexOf("]", start + 1);
  if (close < 0) throw invalid(`unterminated quoted identifier starting at offset ${start}`);
  return make(sql, "quoted-ident", start, close + 1, sql.slice(start + 1, close));
}

/** SQLite rejects a blob literal with an odd count or non-hex digits; so do we. */
function readBlob(sql: string, start: number): Token {
  const close = sql.indexOf("'", start + 2);
  if (close < 0) throw invalid(`unterminated blob literal starting at offset ${start}`);
  const hex = sql.slice(start + 2, close);
  if (hex.length % 2 !== 0 || !/^[0-9A-Fa-f]*$/.test(hex)) {
    throw invalid(`malformed blob literal at offset ${start}`);
  }
  return make(sql, "blob", start, close + 1, hex);
}

function readNumber(sql: string, start: number): Token {
  const hexStart = start + 2;
  if (/^0[xX]/.test(sql.slice(start, hexStart)) && isHexDigit(sql.charCodeAt(hexStart))) {
    return make(sql, "number", start, skipDigits(sql, hexStart, isHexDigit));
  }
  let pos = skipDigits(sql, start, isDigit);
  if (sql.charAt(pos) === ".") pos = skipDigits(sql, pos + 1, isDigit);
  return make(sql, "number", start, skipExponent(sql, pos));
}

/** Digits, with the `_` separators newer SQLite accepts between two digits. */
function skipDigits(sql: string, from: number, digit: (code: number) => boolean): number {
  let pos = from;
  for (;;) {
    if (digit(sql.charCodeAt(pos))) pos++;
    else if (sql.charAt(pos) === "_" && pos > from && digit(sql.charCodeAt(pos + 1))) pos += 2;
    else return pos;
  }
}

/** An `e` only belongs to the number when digits follow it (after an optional sign). */
function skipExponent(sql: string, from: number): number {
  const e = sql.charAt(from);
  if (e !== "e" && e !== "E") return from;
  const sign = sql.charAt(from + 1);
  const digits = sign === "+" || sign === "-" ? from + 2 : from + 1;
  return isDigit(sql.charCodeAt(digits)) ? skipDigits(sql, digits, isDigit) : from;
}

/** Quotes an identifier for SQLite, doubling any quote inside it. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
