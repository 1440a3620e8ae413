/** core/held-rows.ts: which dump statements rows held back may pass, and the bounds. */
import { describe, expect, it } from "vitest";
import { parseDumpStatement } from "../core/dump-statement";
import {
  createsObject,
  HELD_MAX_ROWS,
  HeldRows,
  insertTarget,
  mayPassHeldRows,
  whyRowsMustKeepOrder,
} from "../core/held-rows";
import { splitRows } from "../core/import-batcher";

describe("mayPassHeldRows", () => {
  it.each([
    ["INSERT INTO t VALUES(1,2)", true],
    ["CREATE TABLE b (id INTEGER PRIMARY KEY)", true],
    ["create virtual table f using fts5(a)", true],
    ["CREATE UNIQUE INDEX i ON t (a)", true],
    ["CREATE INDEX i ON t (a) WHERE a > 0", true],
    ["CREATE VIEW v AS SELECT * FROM t", true],
    ["CREATE TABLE g (a, b AS (a + 1))", true],
    ["CREATE TABLE copy AS SELECT * FROM t", false],
    ["CREATE TABLE IF NOT EXISTS copy AS SELECT * FROM t", false],
    ["BEGIN TRANSACTION", true],
    ["CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END", false],
    ["UPDATE t SET a = 1", false],
    ["DELETE FROM t", false],
    ["INSERT INTO t SELECT * FROM u", false],
    ["DELETE FROM sqlite_sequence", false],
    ["INSERT INTO sqlite_sequence VALUES('t',5)", false],
    ["/* CREATE TABLE */ UPDATE t SET a = 1", false],
  ])("%s: %s", (sql, passes) => {
    expect(mayPassHeldRows(parseDumpStatement(sql))).toBe(passes);
  });

  it("reads words, not text: a comment or a quoted CREATE is not one", () => {
    expect(createsObject("-- CREATE TABLE x\nDELETE FROM t")).toBe(false);
    expect(createsObject("'CREATE TABLE'")).toBe(false);
    expect(createsObject("CREATE /* a */ TABLE x (a)")).toBe(true);
  });
});

describe("whyRowsMustKeepOrder", () => {
  it("lets rows wait unless a trigger exists or their table keeps the first or last of two", () => {
    const plain = "CREATE TABLE c (id INTEGER PRIMARY KEY, p REFERENCES p (id), v UNIQUE)";
    expect(whyRowsMustKeepOrder({ triggers: false, tableSql: plain })).toBeNull();
    expect(whyRowsMustKeepOrder({ triggers: false, tableSql: null })).toBeNull();
    expect(whyRowsMustKeepOrder({ triggers: true, tableSql: plain })).toMatch(/trigger/);
    for (const clause of ["REPLACE", "ignore"]) {
      const sql = `CREATE TABLE c (id INTEGER PRIMARY KEY ON CONFLICT ${clause}, p)`;
      expect(whyRowsMustKeepOrder({ triggers: false, tableSql: sql })).toMatch(
        new RegExp(`ON CONFLICT ${clause.toUpperCase()}`),
      );
    }
    // ABORT, FAIL and ROLLBACK fail the import whichever row comes first; a name is a name.
    const abort = 'CREATE TABLE c (id PRIMARY KEY ON CONFLICT ABORT, "conflict replace")';
    expect(whyRowsMustKeepOrder({ triggers: false, tableSql: abort })).toBeNull();
  });

  it("reads the table an INSERT names", () => {
    expect(insertTarget('INSERT INTO "my table"("a") VALUES(?)')).toBe("my table");
    expect(insertTarget("INSERT INTO main.t VALUES(?)")).toBe("t");
    expect(insertTarget("insert into [x] values(1)")).toBe("x");
    expect(insertTarget("SELECT 1")).toBeNull();
  });
});

describe("HeldRows", () => {
  const grouping = { prefix: "INSERT INTO t", width: 2, rows: [{ first: 1, last: 1, line: 3 }] };
  const row = (bytes: number) => ({
    item: { kind: "sql" as const, sql: "INSERT INTO t VALUES(?,?)", params: [1n, 2n] },
    span: { first: 1, last: 1, line: 3 },
    grouping,
    bytes,
  });

  it("gives back what it holds, once", () => {
    const held = new HeldRows();
    held.hold([row(10), row(10)]);
    expect(held.size).toBe(2);
    expect(held.take()).toHaveLength(2);
    expect(held.size).toBe(0);
    expect(held.take()).toEqual([]);
  });

  it("refuses past its bounds, by rows and by bytes, naming the first row's line", () => {
    const many = new HeldRows();
    expect(() => many.hold(Array.from({ length: HELD_MAX_ROWS + 1 }, () => row(1)))).toThrow(
      /more than an import holds back.*line 3/,
    );
    const large = new HeldRows();
    expect(() => large.hold([row(1_500_000), row(1_500_000)])).toThrow(/3000000 bytes/);
  });
});

describe("splitRows", () => {
  it("makes one INSERT per row, each with its own span and values", () => {
    const spans = [1, 2, 3].map((n) => ({ first: n, last: n, line: n + 10 }));
    const rows = splitRows(
      {
        kind: "sql",
        sql: "INSERT INTO t VALUES(?,?),(?,?),(?,?)",
        params: [1n, 2n, 3n, 4n, 5n, 6n],
      },
      { prefix: "INSERT INTO t", width: 2, rows: spans },
      30,
    );
    expect(rows.map((r) => r.item)).toEqual([
      { kind: "sql", sql: "INSERT INTO t VALUES(?,?)", params: [1n, 2n] },
      { kind: "sql", sql: "INSERT INTO t VALUES(?,?)", params: [3n, 4n] },
      { kind: "sql", sql: "INSERT INTO t VALUES(?,?)", params: [5n, 6n] },
    ]);
    expect(rows.map((r) => r.span.line)).toEqual([11, 12, 13]);
    expect(rows.map((r) => r.bytes)).toEqual([10, 10, 10]);
  });
});
