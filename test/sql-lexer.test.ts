import { describe, expect, it } from "vitest";
import { ApiError } from "../core/errors";
import { type Token, type TokenType, tokenize } from "../core/sql-lexer";

function types(sql: string): TokenType[] {
  return tokenize(sql).map((token) => token.type);
}

function values(sql: string): string[] {
  return tokenize(sql).map((token) => token.value);
}

function only(sql: string): Token {
  const tokens = tokenize(sql);
  expect(tokens).toHaveLength(1);
  const [token] = tokens;
  if (token === undefined) throw new Error("no token");
  return token;
}

function invalidSql(sql: string): ApiError {
  try {
    tokenize(sql);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe("INVALID_SQL");
    return error as ApiError;
  }
  throw new Error(`tokenize accepted ${sql}`);
}

describe("tokenize", () => {
  it("returns no tokens for empty or blank input", () => {
    expect(tokenize("")).toEqual([]);
    expect(tokenize(" \t\r\n\f\v ")).toEqual([]);
  });

  it("reads bare words, with digits, underscores and dollars after the first character", () => {
    expect(tokenize("SELECT _a1$b")).toEqual([
      { type: "word", text: "SELECT", value: "SELECT", start: 0, end: 6 },
      { type: "word", text: "_a1$b", value: "_a1$b", start: 7, end: 12 },
    ]);
  });

  it("reads non-ASCII characters as part of a word, as SQLite does", () => {
    expect(only("café")).toMatchObject({ type: "word", value: "café" });
  });

  it("reads double-quoted identifiers and unescapes doubled quotes", () => {
    expect(only('"a ""b"" c"')).toMatchObject({
      type: "quoted-ident",
      text: '"a ""b"" c"',
      value: 'a "b" c',
    });
  });

  it("reads backtick and bracket identifiers", () => {
    expect(only("`my``col`")).toMatchObject({ type: "quoted-ident", value: "my`col" });
    expect(only("[my col]")).toMatchObject({ type: "quoted-ident", value: "my col" });
  });

  it("reads single-quoted strings and unescapes doubled quotes", () => {
    expect(only("'it''s -- not /* a comment'")).toMatchObject({
      type: "string",
      value: "it's -- not /* a comment",
    });
    expect(only("''")).toMatchObject({ type: "string", value: "" });
  });

  it("reads blob literals in either case and keeps their hex digits as the value", () => {
    expect(only("X'0aFF'")).toMatchObject({ type: "blob", text: "X'0aFF'", value: "0aFF" });
    expect(only("x''")).toMatchObject({ type: "blob", value: "" });
  });

  it("reads a word ending in x followed by a string as two tokens", () => {
    expect(types("tax'a'")).toEqual(["word", "string"]);
  });

  it("reads integers, decimals, exponents and hex numbers", () => {
    const sql = "1 12.5 .5 3. 1e10 2.5E-3 7e+2 0x1F 0XaB 1_000";
    expect(types(sql)).toEqual(Array(10).fill("number"));
    expect(values(sql)).toEqual(sql.split(" "));
  });

  it("reads a number run straight into letters as one illegal token, as SQLite does", () => {
    for (const sql of ["SELECT 1e", "SELECT 1abc", "SELECT 0x", "SELECT 12_e"]) {
      expect(invalidSql(sql).message).toMatch(/unrecognized token/);
    }
  });

  it("reads every parameter form", () => {
    const sql = "? ?12 :name @at $dollar :1 #hash $a::b";
    expect(types(sql)).toEqual(Array(8).fill("param"));
    expect(values(sql)).toEqual(sql.split(" "));
  });

  it("reads TCL variables: a parenthesis swallows up to the next blank or ), quotes and all", () => {
    expect(values("SELECT $a(') UNION SELECT 1 --')")).toEqual([
      "SELECT",
      "$a(')",
      "UNION",
      "SELECT",
      "1",
    ]);
    for (const prefix of ["$", ":", "@", "#"]) {
      const tokens = tokenize(`SELECT ${prefix}v(x;DELETE) FROM t`);
      expect(tokens.map((t) => t.type)).toEqual(["word", "param", "word", "word"]);
      expect(tokens[1]?.text).toBe(`${prefix}v(x;DELETE)`);
    }
    // A parenthesis that meets a blank before its ) is illegal to SQLite.
    expect(invalidSql("SELECT $v(a b)").message).toMatch(/unrecognized token/);
    // A sigil with no name is illegal; a parenthesis right after it is not TCL's.
    expect(invalidSql("SELECT $(x)").message).toMatch(/unrecognized token/);
    expect(invalidSql("SELECT : a").message).toMatch(/unrecognized token/);
  });

  it("reads \\v as a blank only after another blank, and U+FEFF as one where a token starts", () => {
    expect(types(" \v1")).toEqual(["number"]);
    expect(invalidSql("SELECT 1\v").message).toMatch(/unrecognized token/);
    expect(values("\ufeffSELECT 1")).toEqual(["SELECT", "1"]);
    expect(values("a\ufeffb")).toEqual(["a\ufeffb"]);
  });

  it("reads operators as punct, two-character operators as one token", () => {
    const sql = "( ) , . = || <= >= <> != == << >> -> ->> + - * / % < > & | ~";
    expect(types(sql)).toEqual(Array(25).fill("punct"));
    expect(values(sql)).toEqual(sql.split(" "));
  });

  it("reads operators without spaces around them", () => {
    expect(values("a||'b'<=c")).toEqual(["a", "||", "b", "<=", "c"]);
  });

  it("reads a semicolon as its own token type", () => {
    expect(types("SELECT 1; SELECT 2;")).toEqual([
      "word",
      "number",
      "semicolon",
      "word",
      "number",
      "semicolon",
    ]);
  });

  it("skips line and block comments and reports offsets into the original text", () => {
    const sql = "SELECT -- one\n a /* two\n lines */, b -- at the end";
    const tokens = tokenize(sql);
    expect(tokens.map((token) => token.text)).toEqual(["SELECT", "a", ",", "b"]);
    for (const token of tokens) expect(sql.slice(token.start, token.end)).toBe(token.text);
  });

  it("does not read comment markers inside strings or quoted identifiers", () => {
    expect(values(`'--x' "/*y*/"`)).toEqual(["--x", "/*y*/"]);
  });

  it("refuses an unterminated string", () => {
    expect(invalidSql("SELECT 'abc").message).toMatch(/unrecognized token: "'abc"/);
    expect(invalidSql("SELECT 'it''s").message).toMatch(/unrecognized token/);
  });

  it("refuses unterminated quoted identifiers of every kind", () => {
    for (const sql of ['SELECT "abc', "SELECT `abc", "SELECT [abc"]) {
      expect(invalidSql(sql).message).toMatch(/unrecognized token/);
    }
  });

  it("reads an unterminated block comment as a comment to the end, as SQLite does", () => {
    expect(values("SELECT 1 /* never closed")).toEqual(["SELECT", "1"]);
    expect(values("SELECT 1 /*/ 2")).toEqual(["SELECT", "1"]);
    // `/*` at the very end is a slash and a star.
    expect(values("SELECT 1 /*")).toEqual(["SELECT", "1", "/", "*"]);
  });

  it("refuses unterminated and malformed blob literals", () => {
    for (const sql of ["SELECT X'00", "SELECT X'0'", "SELECT X'GG'"]) {
      expect(invalidSql(sql).message).toMatch(/unrecognized token/);
    }
  });

  it("refuses a NUL character anywhere, since SQLite stops reading at it", () => {
    for (const sql of [
      "SELECT 1\0",
      "SELECT '\0' AS z",
      "SELECT 1 /*\0*/",
      "INSERT INTO t VALUES (1) \0 DELETE FROM t",
    ]) {
      expect(invalidSql(sql).message).toMatch(/NUL character at offset \d+/);
    }
  });

  it("accepts a line comment that runs to the end of the input", () => {
    expect(values("SELECT 1 -- no newline")).toEqual(["SELECT", "1"]);
  });
});
