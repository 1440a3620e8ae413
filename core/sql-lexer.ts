/**
 * SQLite's tokenizer, ported rule for rule from sqlite3GetToken (tokenize.c),
 * so that where this code sees a token boundary, SQLite sees the same one.
 * That matters for one decision the guard cannot hand to SQLite: where a
 * statement ends (workerd runs every statement of a multi-statement string, and
 * EXPLAIN explains only the first). Everything else the guard decides from
 * SQLite's compiled program; the tokens are used to rewrite (parameters, trigger
 * guards) and to find statement boundaries.
 *
 * Positions are UTF-16 offsets into the JS string. SQLite works on UTF-8 bytes,
 * where every byte of a non-ASCII character is >= 0x80 and an identifier
 * character; a UTF-16 code unit >= 0x80 stands for those bytes, so the classes
 * agree. U+FEFF (the UTF-8 byte order mark) is whitespace where a token starts.
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

/** SQLite's sqlite3Isspace: space, \t, \n, \v, \f, \r. */
function isSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13);
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

function isHexDigit(code: number): boolean {
  return isDigit(code) || (code >= 65 && code <= 70) || (code >= 97 && code <= 102);
}

/** IdChar(): letters, digits, `_`, `$` and every non-ASCII unit. */
function isIdChar(code: number): boolean {
  return (
    (code >= 65 && code <= 90) ||
    (code >= 97 && code <= 122) ||
    isDigit(code) ||
    code === 95 ||
    code === 36 ||
    code >= 0x80
  );
}

const BOM = 0xfeff;
const DIGIT_SEPARATOR = 95; // `_`

function invalid(message: string): ApiError {
  return new ApiError("INVALID_SQL", message);
}

export function tokenize(sql: string): Token[] {
  // SQLite stops reading at a NUL, so the text past it would be read by the guard
  // alone; the runtime then fails on what SQLite left ("did not contain a statement").
  const nul = sql.indexOf("\0");
  if (nul >= 0) throw invalid(`SQL text contains a NUL character at offset ${nul}`);
  const tokens: Token[] = [];
  let pos = 0;
  while (pos < sql.length) {
    const step = readToken(sql, pos);
    if (step.token !== null) tokens.push(step.token);
    pos = step.end;
  }
  return tokens;
}

interface Step {
  /** null for whitespace and comments. */
  token: Token | null;
  end: number;
}

function make(sql: string, type: TokenType, start: number, end: number, value?: string): Step {
  const text = sql.slice(start, end);
  return { token: { type, text, value: value ?? text, start, end }, end };
}

function skip(end: number): Step {
  return { token: null, end };
}

function illegal(sql: string, start: number, end: number): never {
  const text = sql.slice(start, Math.max(end, start + 1));
  throw invalid(`unrecognized token: "${text.slice(0, 40)}" at offset ${start}`);
}

const ONE_CHAR_PUNCT = new Set(["(", ")", "+", "*", "%", ",", "&", "~"]);

function readToken(sql: string, start: number): Step {
  const c = sql.charCodeAt(start);
  const ch = sql.charAt(start);
  const next = sql.charCodeAt(start + 1);
  // CC_SPACE: \v is whitespace only after another space character.
  if (c === 32 || c === 9 || c === 10 || c === 12 || c === 13 || c === BOM) {
    let i = start + 1;
    while (i < sql.length && isSpace(sql.charCodeAt(i))) i++;
    return skip(i);
  }
  if (ch === "-") {
    if (sql.charAt(start + 1) === "-") {
      const newline = sql.indexOf("\n", start + 2);
      return skip(newline < 0 ? sql.length : newline);
    }
    if (sql.charAt(start + 1) === ">") {
      return make(sql, "punct", start, start + (sql.charAt(start + 2) === ">" ? 3 : 2));
    }
    return make(sql, "punct", start, start + 1);
  }
  if (ch === "/") {
    // `/*` to the matching `*/`, or to the end of the text: SQLite accepts both.
    if (sql.charAt(start + 1) !== "*" || start + 2 >= sql.length) {
      return make(sql, "punct", start, start + 1);
    }
    const close = sql.indexOf("*/", start + 2);
    return skip(close < 0 ? sql.length : close + 2);
  }
  if (ch === ";") return make(sql, "semicolon", start, start + 1);
  if (ONE_CHAR_PUNCT.has(ch)) return make(sql, "punct", start, start + 1);
  if (ch === "=") return make(sql, "punct", start, start + (sql.charAt(start + 1) === "=" ? 2 : 1));
  if (ch === "<") {
    const two = sql.charAt(start + 1);
    return make(sql, "punct", start, start + (two === "=" || two === ">" || two === "<" ? 2 : 1));
  }
  if (ch === ">") {
    const two = sql.charAt(start + 1);
    return make(sql, "punct", start, start + (two === "=" || two === ">" ? 2 : 1));
  }
  if (ch === "!") {
    if (sql.charAt(start + 1) !== "=") illegal(sql, start, start + 1);
    return make(sql, "punct", start, start + 2);
  }
  if (ch === "|") return make(sql, "punct", start, start + (sql.charAt(start + 1) === "|" ? 2 : 1));
  if (ch === "'" || ch === '"' || ch === "`") return readQuoted(sql, start, ch);
  if (ch === "." && !isDigit(next)) return make(sql, "punct", start, start + 1);
  if (ch === "." || isDigit(c)) return readNumber(sql, start);
  if (ch === "[") {
    const close = sql.indexOf("]", start + 1);
    if (close < 0) illegal(sql, start, sql.length);
    return make(sql, "quoted-ident", start, close + 1, sql.slice(start + 1, close));
  }
  if (ch === "?") {
    let i = start + 1;
    while (isDigit(sql.charCodeAt(i))) i++;
    return make(sql, "param", start, i);
  }
  if (ch === "$" || ch === "@" || ch === "#" || ch === ":") return readVariable(sql, start);
  if ((ch === "x" || ch === "X") && sql.charAt(start + 1) === "'") return readBlob(sql, start);
  if (isIdChar(c) && !isDigit(c) && c !== 36) {
    let i = start + 1;
    while (i < sql.length && isIdChar(sql.charCodeAt(i))) i++;
    return make(sql, "word", start, i);
  }
  return illegal(sql, start, start + 1);
}

/**
 * '...' is a string; "..." and `...` are identifiers. A doubled delimiter is
 * the delimiter itself. An unterminated one is an illegal token.
 */
function readQuoted(sql: string, start: number, quote: string): Step {
  let pos = start + 1;
  for (;;) {
    const close = sql.indexOf(quote, pos);
    if (close < 0) illegal(sql, start, sql.length);
    if (sql.charAt(close + 1) !== quote) {
      const value = sql.slice(start + 1, close).replaceAll(quote + quote, quote);
      return make(sql, quote === "'" ? "string" : "quoted-ident", start, close + 1, value);
    }
    pos = close + 2;
  }
}

/** Digits with optional `_` separators; returns the position after them. */
function digits(sql: string, from: number, digit: (code: number) => boolean): number {
  let i = from;
  while (digit(sql.charCodeAt(i)) || sql.charCodeAt(i) === DIGIT_SEPARATOR) i++;
  return i;
}

function readNumber(sql: string, start: number): Step {
  let i: number;
  if (sql.startsWith("0x", start) || sql.startsWith("0X", start)) {
    if (isHexDigit(sql.charCodeAt(start + 2))) i = digits(sql, start + 3, isHexDigit);
    else i = start + 1;
  } else {
    i = digits(sql, start, isDigit);
    if (sql.charAt(i) === ".") i = digits(sql, i + 1, isDigit);
    const e = sql.charAt(i);
    if (e === "e" || e === "E") {
      const sign = sql.charAt(i + 1);
      if (isDigit(sql.charCodeAt(i + 1))) i = digits(sql, i + 2, isDigit);
      else if ((sign === "+" || sign === "-") && isDigit(sql.charCodeAt(i + 2))) {
        i = digits(sql, i + 3, isDigit);
      }
    }
  }
  // `1abc`, `0x` and `12e` are one illegal token to SQLite, not a number and a word.
  if (isIdChar(sql.charCodeAt(i))) {
    let end = i;
    while (isIdChar(sql.charCodeAt(end))) end++;
    illegal(sql, start, end);
  }
  return make(sql, "number", start, i);
}

/**
 * `$name`, `@name`, `#name`, `:name`, with TCL's forms: `name::sub` and
 * `name(...)`, where the parenthesis swallows everything up to the next
 * whitespace or `)` (quotes, semicolons and comment markers included).
 */
function readVariable(sql: string, start: number): Step {
  let n = 0;
  let i = start + 1;
  for (; i < sql.length; i++) {
    const code = sql.charCodeAt(i);
    if (isIdChar(code)) {
      n++;
    } else if (sql.charAt(i) === "(" && n > 0) {
      do i++;
      while (i < sql.length && !isSpace(sql.charCodeAt(i)) && sql.charAt(i) !== ")");
      if (sql.charAt(i) !== ")") illegal(sql, start, i);
      i++;
      break;
    } else if (sql.charAt(i) === ":" && sql.charAt(i + 1) === ":") {
      i++;
    } else {
      break;
    }
  }
  if (n === 0) illegal(sql, start, i);
  return make(sql, "param", start, i);
}

/** X'..': an even count of hex digits and a closing quote, else illegal. */
function readBlob(sql: string, start: number): Step {
  let i = start + 2;
  while (isHexDigit(sql.charCodeAt(i))) i++;
  if (sql.charAt(i) !== "'" || (i - start) % 2 !== 0) illegal(sql, start, i + 1);
  return make(sql, "blob", start, i + 1, sql.slice(start + 2, i));
}

/** Quotes an identifier for SQLite, doubling any quote inside it. */
/** A name as SQLite compares names: ASCII letters folded to lower case, nothing else. */
export function asciiLower(name: string): string {
  return name.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Quotes a string literal for SQLite. */
export function quoteString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
