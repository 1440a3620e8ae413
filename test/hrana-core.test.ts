/**
 * The libSQL endpoint's pure rules: which statements are transaction control,
 * where a sequence's statements end, batch conditions, value conversions both
 * ways, named arguments, error codes and batons.
 */
import { describe, expect, it } from "vitest";
import { signBaton, verifyBaton } from "../core/hrana/baton";
import { checkConditions, holds } from "../core/hrana/conditions";
import { controlOf, splitStatements } from "../core/hrana/control";
import { outcomeDigest, readCandidate } from "../core/hrana/program";
import { toHranaError, toStatement, toStmtResult } from "../core/hrana/translate";
import { fromHranaValue, stringifyHrana, toHranaValue } from "../core/hrana/values";

describe("controlOf", () => {
  it.each([
    ["BEGIN", { kind: "begin", mode: "deferred" }],
    ["begin immediate", { kind: "begin", mode: "immediate" }],
    ["BEGIN EXCLUSIVE TRANSACTION;", { kind: "begin", mode: "exclusive" }],
    ["BEGIN TRANSACTION READONLY", { kind: "begin", mode: "readonly" }],
    ["/* c */ BEGIN -- x", { kind: "begin", mode: "deferred" }],
    ["COMMIT", { kind: "commit" }],
    ["END TRANSACTION", { kind: "commit" }],
    ["ROLLBACK", { kind: "rollback" }],
    ["PRAGMA foreign_keys=off", { kind: "foreign-keys", on: false }],
    ["PRAGMA main.foreign_keys = ON", { kind: "foreign-keys", on: true }],
    ["pragma foreign_keys(0)", { kind: "foreign-keys", on: false }],
    ["PRAGMA foreign_keys", { kind: "foreign-keys-query" }],
  ])("%s is control", (sql, expected) => {
    expect(controlOf(sql)).toEqual(expected);
  });

  it.each([
    "BEGIN IMMEDIATE IMMEDIATE",
    "BEGIN; DELETE FROM t",
    "ROLLBACK TO sp",
    "COMMIT; DROP TABLE t",
    "PRAGMA foreign_keys = OFF; DELETE FROM t",
    "PRAGMA foreign_keys = maybe",
    "PRAGMA journal_mode = OFF",
    "PRAGMA writable_schema = ON",
    "SELECT 1",
    "'BEGIN'",
    "END; SELECT 1",
  ])("%s is not control (it goes to the guard as SQL)", (sql) => {
    expect(controlOf(sql)).toBeNull();
  });
});

describe("splitStatements", () => {
  it("ends statements where SQLite does", () => {
    expect(splitStatements("SELECT 1; SELECT ';'; -- a ; comment\nSELECT /* ; */ 2;")).toEqual([
      "SELECT 1",
      "SELECT ';'",
      "SELECT /* ; */ 2",
    ]);
    expect(splitStatements(";; SELECT 1 ;;")).toEqual(["SELECT 1"]);
    expect(splitStatements('SELECT "a;b" FROM t; SELECT [x;y]')).toEqual([
      'SELECT "a;b" FROM t',
      "SELECT [x;y]",
    ]);
  });

  it("keeps a CREATE TRIGGER body, CASE … END inside it included, as one statement", () => {
    const trigger =
      "CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO u VALUES (CASE WHEN new.a THEN 1 ELSE 2 END); DELETE FROM v; END";
    expect(splitStatements(`${trigger}; SELECT 1`)).toEqual([trigger, "SELECT 1"]);
  });

  it("refuses a sequence with nothing in it", () => {
    expect(() => splitStatements(" ; -- nothing")).toThrow(/no statement/);
  });
});

describe("conditions", () => {
  it("follow the spec on ok, error and skipped steps", () => {
    const states = ["ok", "error", "skipped"] as const;
    expect(holds({ type: "ok", step: 0 }, 3, states, true)).toBe(true);
    expect(holds({ type: "error", step: 1 }, 3, states, true)).toBe(true);
    expect(holds({ type: "ok", step: 2 }, 3, states, true)).toBe(false);
    expect(holds({ type: "error", step: 2 }, 3, states, true)).toBe(false);
    expect(holds({ type: "not", cond: { type: "ok", step: 2 } }, 3, states, true)).toBe(true);
    expect(holds({ type: "and", conds: [] }, 3, states, true)).toBe(true);
    expect(holds({ type: "or", conds: [] }, 3, states, true)).toBe(false);
    expect(holds({ type: "is_autocommit" }, 3, states, false)).toBe(false);
  });

  it("may name earlier steps only, and not nest without end", () => {
    expect(() => checkConditions([null, { type: "ok", step: 1 }])).toThrow(/earlier step/);
    let deep: Parameters<typeof holds>[0] = { type: "ok", step: 0 };
    for (let i = 0; i < 40; i++) deep = { type: "not", cond: deep };
    expect(() => checkConditions([null, deep])).toThrow(/too deep/);
  });
});

describe("values", () => {
  it("bind exactly", () => {
    expect(fromHranaValue({ type: "integer", value: "-9223372036854775808" }, "a")).toBe(
      -(2n ** 63n),
    );
    expect(fromHranaValue({ type: "float", value: 42 }, "a")).toBe(42);
    expect(fromHranaValue({ type: "blob", base64: "AAE" }, "a")).toEqual(new Uint8Array([0, 1]));
    expect(() => fromHranaValue({ type: "integer", value: "1.5" }, "a")).toThrow(/not an integer/);
    expect(() => fromHranaValue({ type: "integer", value: "9223372036854775808" }, "a")).toThrow(
      /outside 64 bits/,
    );
    expect(() => fromHranaValue({ type: "blob", base64: "**" }, "a")).toThrow(/base64/);
  });

  it("come back in Hrana's form, and through JSON exactly", () => {
    expect(toHranaValue(7)).toEqual({ type: "integer", value: "7" });
    expect(toHranaValue(7.5)).toEqual({ type: "float", value: 7.5 });
    expect(toHranaValue({ int: "9007199254740993" })).toEqual({
      type: "integer",
      value: "9007199254740993",
    });
    expect(toHranaValue({ real: 2 })).toEqual({ type: "float", value: 2 });
    const specials = [
      toHranaValue({ real: "Infinity" }),
      toHranaValue({ real: "-Infinity" }),
      toHranaValue({ real: "-0.0" }),
    ];
    const back = JSON.parse(stringifyHrana({ rows: [specials] })).rows[0];
    expect(back[0].value).toBe(Infinity);
    expect(back[1].value).toBe(-Infinity);
    expect(Object.is(back[2].value, -0)).toBe(true);
  });

  it("never mistake a stored text for a placeholder", () => {
    const text = stringifyHrana([
      { type: "text", value: "@x:inf" },
      { type: "float", value: Infinity },
    ]);
    expect(JSON.parse(text)).toEqual([
      { type: "text", value: "@x:inf" },
      { type: "float", value: Infinity },
    ]);
  });
});

describe("statements and results", () => {
  it("map named arguments to the numbers SQLite gives them", () => {
    const s = toStatement(
      {
        sql: "SELECT ?, :a, @b, :a, $c",
        args: [{ type: "text", value: "pos" }],
        named_args: [
          { name: "a", value: { type: "integer", value: "1" } },
          { name: "@b", value: { type: "integer", value: "2" } },
          { name: "$c", value: { type: "null" } },
        ],
      },
      new Map(),
    );
    // ? is 1, :a is 2 (both times), @b is 3, $c is 4: positional args fill from 1.
    expect(s.params).toEqual(["pos", 1n, 2n, null]);
  });

  it("bind a bare name to every parameter of that name, a prefixed one to its own (as sqld)", () => {
    const bare = toStatement(
      {
        sql: "SELECT :a, @a, $a",
        named_args: [{ name: "a", value: { type: "integer", value: "7" } }],
      },
      new Map(),
    );
    expect(bare.params).toEqual([7n, 7n, 7n]);
    const prefixed = toStatement(
      {
        sql: "SELECT :a, @a",
        named_args: [
          { name: ":a", value: { type: "integer", value: "1" } },
          { name: "@a", value: { type: "integer", value: "2" } },
        ],
      },
      new Map(),
    );
    expect(prefixed.params).toEqual([1n, 2n]);
    expect(() =>
      toStatement(
        { sql: "SELECT :a, @a", named_args: [{ name: ":a", value: { type: "null" } }] },
        new Map(),
      ),
    ).toThrow(/has no value/);
  });

  it("refuse a name the statement has not, a missing value, or no SQL", () => {
    expect(() =>
      toStatement(
        { sql: "SELECT :a", named_args: [{ name: "b", value: { type: "null" } }] },
        new Map(),
      ),
    ).toThrow(/no parameter b/);
    expect(() =>
      toStatement(
        { sql: "SELECT :a, :b", named_args: [{ name: "a", value: { type: "null" } }] },
        new Map(),
      ),
    ).toThrow(/has no value/);
    expect(() => toStatement({ sql_id: 3 }, new Map())).toThrow(/no SQL stored/);
    expect(() => toStatement({ sql: "SELECT 1", sql_id: 3 }, new Map())).toThrow(/exactly one/);
  });

  it("give last_insert_rowid as a string, exactly", () => {
    const r = toStmtResult({ rowsWritten: 1, lastRowId: { int: "9223372036854775807" } });
    expect(r.last_insert_rowid).toBe("9223372036854775807");
    expect(toStmtResult({ rowsWritten: 0, lastRowId: null }).last_insert_rowid).toBeNull();
  });

  it("name SQLite's errors with SQLite's codes", () => {
    expect(
      toHranaError({
        code: "INVALID_SQL",
        message: "UNIQUE constraint failed: t.a: SQLITE_CONSTRAINT",
      }).code,
    ).toBe("SQLITE_CONSTRAINT");
    expect(toHranaError({ code: "INVALID_SQL", message: "no such table: x" }).code).toBe(
      "SQLITE_ERROR",
    );
    expect(toHranaError({ code: "NON_DETERMINISTIC", message: "m" }).code).toBe(
      "NON_DETERMINISTIC",
    );
    expect(
      toHranaError({
        code: "UNAVAILABLE",
        message: "m",
        details: { hranaCode: "TRANSACTION_CONFLICT" },
      }).code,
    ).toBe("TRANSACTION_CONFLICT");
  });

  it("send to replicas only programs of plain queries", () => {
    const q = (sql: string) => ({
      steps: [{ op: { kind: "sql" as const, statement: { sql, params: [] } } }],
    });
    expect(readCandidate([q("SELECT 1"), q("WITH x AS (SELECT 1) SELECT * FROM x")])).toBe(true);
    expect(readCandidate([q("SELECT 1"), q("INSERT INTO t VALUES (1)")])).toBe(false);
    expect(readCandidate([{ steps: [{ op: { kind: "begin", mode: "deferred" } }] }])).toBe(false);
  });

  it("digest what the client saw, so any difference shows", () => {
    const a = outcomeDigest({ ok: true, result: { rowsWritten: 1, lastRowId: 5 } });
    expect(outcomeDigest({ ok: true, result: { rowsWritten: 1, lastRowId: 5 } })).toBe(a);
    expect(outcomeDigest({ ok: true, result: { rowsWritten: 1, lastRowId: 6 } })).not.toBe(a);
    expect(outcomeDigest({ ok: false, error: { code: "INVALID_SQL", message: "x" } })).not.toBe(a);
  });
});

describe("batons", () => {
  const stream = "a".repeat(64);
  it("verify only as signed, for the cluster signed", async () => {
    const baton = await signBaton("secret", "main", { stream, seq: 3 });
    expect(await verifyBaton("secret", "main", baton)).toEqual({ stream, seq: 3 });
    expect(await verifyBaton("secret", "other", baton)).toBeNull();
    expect(await verifyBaton("other secret", "main", baton)).toBeNull();
    expect(await verifyBaton("secret", "main", baton.replace(".3.", ".4."))).toBeNull();
    expect(await verifyBaton("secret", "main", `${baton}x`)).toBeNull();
    expect(await verifyBaton("secret", "main", "not a baton")).toBeNull();
  });
});
