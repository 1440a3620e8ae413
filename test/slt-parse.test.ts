import { describe, expect, it } from "vitest";
import { parseScript } from "./slt/parse";

describe("sqllogictest parser", () => {
  it("reads statements, queries and control records, one per blank-line-separated block", () => {
    const records = parseScript(
      [
        "hash-threshold 8",
        "",
        "statement ok",
        "CREATE TABLE t1(a INTEGER,",
        "  b INTEGER)",
        "",
        "",
        "statement error",
        "INSERT INTO nope VALUES(1)",
        "",
        "query IT rowsort my-label",
        "SELECT a,",
        "  b FROM t1",
        "----",
        "1",
        "x",
        "",
        "halt",
      ].join("\n"),
    );
    expect(records).toEqual([
      { kind: "hash-threshold", threshold: 8, line: 1, conditions: [] },
      {
        kind: "statement",
        expect: "ok",
        sql: "CREATE TABLE t1(a INTEGER,\n  b INTEGER)",
        line: 3,
        conditions: [],
      },
      {
        kind: "statement",
        expect: "error",
        sql: "INSERT INTO nope VALUES(1)",
        line: 8,
        conditions: [],
      },
      {
        kind: "query",
        types: ["I", "T"],
        sort: "rowsort",
        label: "my-label",
        sql: "SELECT a,\n  b FROM t1",
        expected: ["1", "x"],
        line: 11,
        conditions: [],
      },
      { kind: "halt", line: 18, conditions: [] },
    ]);
  });

  it("collects skipif/onlyif lines, ignoring what follows the engine name", () => {
    const [record] = parseScript(
      "skipif mysql # not compatible\nonlyif sqlite\nquery I\nSELECT 1\n----\n1\n",
    );
    expect(record).toMatchObject({
      kind: "query",
      line: 3,
      sort: "nosort",
      label: undefined,
      conditions: [
        { kind: "skipif", engine: "mysql" },
        { kind: "onlyif", engine: "sqlite" },
      ],
    });
  });

  it("drops comment lines anywhere, and treats all-space lines and CRLF like the reference", () => {
    const records = parseScript(
      "# a comment\r\nquery T nosort\r\n# inside the record\r\nSELECT 'a'\r\n----\r\na\r\n   \r\nstatement ok\r\nSELECT 1\r\n",
    );
    expect(records).toHaveLength(2);
    expect(records[0]).toMatchObject({ kind: "query", sql: "SELECT 'a'", expected: ["a"] });
    expect(records[1]).toMatchObject({ kind: "statement", sql: "SELECT 1", line: 8 });
  });

  it("keeps a hash line as the one expected line", () => {
    const [record] = parseScript(
      "query I rowsort\nSELECT a FROM t\n----\n30 values hashing to 3c13dee48d9356ae19af2515e05e6b54\n",
    );
    expect(record).toMatchObject({
      expected: ["30 values hashing to 3c13dee48d9356ae19af2515e05e6b54"],
    });
  });

  it("reads a query without ---- as one that expects no values", () => {
    const [record] = parseScript("query I nosort\nSELECT 1 WHERE 0\n");
    expect(record).toMatchObject({ kind: "query", sql: "SELECT 1 WHERE 0", expected: [] });
  });

  it("files a label under its first 20 characters, as the reference does", () => {
    const [record] = parseScript("query I nosort abcdefghij0123456789-tail\nSELECT 1\n----\n1\n");
    expect(record).toMatchObject({ label: "abcdefghij0123456789" });
  });

  it("reports malformed records instead of throwing", () => {
    const records = parseScript(
      "statement maybe\nSELECT 1\n\nquery X nosort\nSELECT 1\n\nquery I sideways\nSELECT 1\n\nfrobnicate\n",
    );
    expect(records.map((r) => (r.kind === "invalid" ? [r.reason, r.stops] : r.kind))).toEqual([
      ["statement argument should be 'ok' or 'error'", false],
      ["unknown type character in 'X'", false],
      ["unknown sort method 'sideways'", false],
      ["unknown record type 'frobnicate'", true],
    ]);
  });
});
