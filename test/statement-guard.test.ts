import { describe, expect, it } from "vitest";
import { ApiError, type ErrorCode } from "../core/errors";
import type { SqlValue } from "../core/protocol";
import {
  type GuardContext,
  type GuardedStatement,
  guardRead,
  guardWrite,
  isReservedName,
  NON_DETERMINISTIC_RULES,
  RESERVED_PREFIXES,
} from "../core/statement-guard";

const NOW = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
const FULL = "'2026-01-02 03:04:05.678'";

/** A fixed context: the same clock, -42n, and bytes 0..n-1 every time. */
const ctx: GuardContext = {
  now: NOW,
  randomInt64: () => -42n,
  randomBytes: (n) => Uint8Array.from({ length: n }, (_, i) => i),
};

function write(sql: string, params: SqlValue[] = [], context = ctx): GuardedStatement {
  return guardWrite({ sql, params }, context);
}

function rewrite(sql: string): string {
  return write(sql).sql;
}

function apiError(run: () => unknown, code: ErrorCode): ApiError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe(code);
    return error as ApiError;
  }
  throw new Error(`expected ApiError ${code}`);
}

function refusedWrite(sql: string, code: ErrorCode, params: SqlValue[] = []): ApiError {
  return apiError(() => write(sql, params), code);
}

function refusedRead(sql: string, code: ErrorCode): ApiError {
  return apiError(() => guardRead(sql), code);
}

describe("guardWrite: one statement per entry", () => {
  it("strips a trailing semicolon and the blanks and comments around it", () => {
    expect(write("INSERT INTO t VALUES (1);")).toEqual({
      sql: "INSERT INTO t VALUES (1)",
      params: [],
      kind: "write",
      rewritten: false,
    });
    expect(rewrite("DELETE FROM t -- all\n ;  /* done */ ")).toBe("DELETE FROM t -- all");
  });

  it("keeps a statement without a semicolon byte-for-byte, trailing blanks included", () => {
    expect(rewrite("UPDATE t SET a = 1  -- why\n")).toBe("UPDATE t SET a = 1  -- why\n");
  });

  it("refuses a second statement after a semicolon", () => {
    const error = refusedWrite("INSERT INTO t VALUES (1); DELETE FROM t", "INVALID_SQL");
    expect(error.message).toMatch(/^one statement per entry/);
  });

  it("refuses anything at all after the semicolon, even another semicolon", () => {
    expect(refusedWrite("SELECT 1;;", "INVALID_SQL").message).toMatch(/one statement/);
  });

  it("accepts the semicolons inside a CREATE TRIGGER body, CASE ... END included", () => {
    const sql =
      "CREATE TRIGGER tr AFTER INSERT ON t BEGIN\n" +
      "  UPDATE u SET n = CASE WHEN n > 0 THEN n + 1 ELSE 1 END;\n" +
      "  DELETE FROM v WHERE id = new.id;\nEND";
    expect(write(`${sql};`)).toEqual({ sql, params: [], kind: "ddl", rewritten: false });
  });

  it("refuses a statement after a CREATE TRIGGER, and a trigger without END", () => {
    const trigger = "CREATE TEMP TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END";
    expect(refusedWrite(`${trigger}; DROP TABLE t`, "INVALID_SQL").message).toMatch(
      /one statement/,
    );
    refusedWrite(
      "CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; DROP TABLE t;",
      "INVALID_SQL",
    );
  });

  it("refuses empty SQL, blank SQL, comments alone and a lone semicolon", () => {
    for (const sql of ["", "   ", "-- nothing", "/* nothing */", ";"]) {
      expect(refusedWrite(sql, "INVALID_SQL").message).toMatch(/empty/);
    }
  });

  it("refuses SQL the lexer cannot read", () => {
    refusedWrite("INSERT INTO t VALUES ('oops)", "INVALID_SQL");
  });
});

describe("guardWrite: statement kind", () => {
  it.each([
    ["SELECT 1", "read"],
    ["values (1, 2)", "read"],
    ["EXPLAIN QUERY PLAN SELECT * FROM t", "read"],
    ["WITH x AS (SELECT 1) SELECT * FROM x", "read"],
    ["WITH x AS (SELECT replace(a, 'b', 'c') AS r FROM t) SELECT r FROM x", "read"],
    ["WITH x AS (SELECT 1 AS a) INSERT INTO t SELECT a FROM x", "write"],
    ["with x as (select 1 as a) update t set a = 2 where a in x", "write"],
    ["WITH x AS (SELECT 1 AS a) DELETE FROM t WHERE a IN x", "write"],
    ["WITH x AS (SELECT 1 AS a) REPLACE INTO t SELECT a FROM x", "write"],
    ["INSERT INTO t VALUES (1)", "write"],
    ["insert or replace into t values (1)", "write"],
    ["UPDATE t SET a = 1", "write"],
    ["DELETE FROM t", "write"],
    ["REPLACE INTO t VALUES (1)", "write"],
    ["CREATE TABLE t (a INTEGER)", "ddl"],
    ["drop table t", "ddl"],
    ["ALTER TABLE t ADD COLUMN b TEXT", "ddl"],
  ])("classifies %s as %s", (sql, kind) => {
    expect(write(sql).kind).toBe(kind);
  });

  it.each([
    ["BEGIN", "each request is already one transaction"],
    ["BEGIN IMMEDIATE TRANSACTION", "each request is already one transaction"],
    ["COMMIT", "each request is already one transaction"],
    ["END", "each request is already one transaction"],
    ["ROLLBACK", "each request is already one transaction"],
    ["SAVEPOINT s", "each request is already one transaction"],
    ["RELEASE s", "each request is already one transaction"],
    ["ATTACH 'x.db' AS x", "replicated"],
    ["DETACH x", "replicated"],
    ["PRAGMA foreign_keys = ON", "pragmas"],
    ["VACUUM", "maintenance"],
    ["ANALYZE", "maintenance"],
    ["REINDEX t", "maintenance"],
  ])("refuses %s with a message naming the statement", (sql, why) => {
    const error = refusedWrite(sql, "INVALID_SQL");
    const word = sql.split(" ")[0] ?? "";
    expect(error.message).toContain(`${word} statements are not allowed`);
    expect(error.message).toContain(why);
  });

  it("refuses an unknown statement, naming it", () => {
    expect(refusedWrite("UPSERT t", "INVALID_SQL").message).toMatch(/unsupported statement UPSERT/);
  });

  it("refuses a statement that does not start with a keyword", () => {
    refusedWrite("(SELECT 1)", "INVALID_SQL");
    refusedWrite('"SELECT" 1', "INVALID_SQL");
  });
});

describe("reserved names", () => {
  it("lists the prefixes reserved for every statement", () => {
    expect(RESERVED_PREFIXES).toEqual(["_repl_", "_cf_", "__miniflare_"]);
  });

  it("matches prefixes case-insensitively, and sqlite_ only for writes", () => {
    expect(isReservedName("_repl_log", false)).toBe(true);
    expect(isReservedName("_REPL_Log", false)).toBe(true);
    expect(isReservedName("_Cf_KV", true)).toBe(true);
    expect(isReservedName("sqlite_master", false)).toBe(false);
    expect(isReservedName("SQLITE_master", true)).toBe(true);
    expect(isReservedName("repl_log", true)).toBe(false);
    expect(isReservedName("my_repl_log", true)).toBe(false);
  });

  it.each([
    ["INSERT INTO _repl_log VALUES (1)", "_repl_log"],
    ["DELETE FROM main._REPL_log", "_REPL_log"],
    ['SELECT * FROM "_repl_log"', "_repl_log"],
    ["UPDATE [_cf_x] SET a = 1", "_cf_x"],
    ["UPDATE `_cf_KV` SET a = 1", "_cf_KV"],
    ["CREATE TABLE t (_repl_col INTEGER)", "_repl_col"],
    ["INSERT INTO sqlite_sequence (name, seq) VALUES ('t', 1)", "sqlite_sequence"],
    ["DELETE FROM sqlite_master", "sqlite_master"],
    ["SELECT * FROM sqlite_schema", "sqlite_schema"],
  ])("refuses %s, naming %s", (sql, name) => {
    const error = refusedWrite(sql, "RESERVED_NAME");
    expect(error.message).toBe(`"${name}" is an internal name and cannot be used`);
    expect(error.details).toEqual({ name });
  });

  it("does not flag a string literal used as a value", () => {
    expect(rewrite("INSERT INTO t VALUES ('_repl_log', 'sqlite_master')")).toBe(
      "INSERT INTO t VALUES ('_repl_log', 'sqlite_master')",
    );
    expect(write("DELETE FROM t WHERE name = '_cf_x' OR name IN ('_repl_a', '_repl_b')").kind).toBe(
      "write",
    );
    expect(write("SELECT a IS DISTINCT FROM '_repl_x' FROM t").kind).toBe("read");
  });

  it("flags a string literal that SQLite would read as a table name", () => {
    for (const sql of [
      "SELECT * FROM '_repl_log'",
      "SELECT * FROM t, '_repl_log'",
      "SELECT * FROM t JOIN '_repl_log' ON 1",
      "INSERT INTO '_repl_log' VALUES (1)",
      "UPDATE '_repl_log' SET a = 1",
      "SELECT '_repl_log'.a FROM t",
      "DROP TABLE IF EXISTS '_repl_log'",
    ]) {
      expect(refusedWrite(sql, "RESERVED_NAME").details).toEqual({ name: "_repl_log" });
    }
  });

  // Each of these reads or writes an internal table through a string name that an earlier
  // guard missed; SQLite accepts every one of them.
  it.each([
    ["x IN 'table'", "SELECT count(*) FROM t WHERE ('applied_lsn', '1') IN '_repl_meta'"],
    ["x NOT IN 'table'", "INSERT INTO t SELECT 1 WHERE 1 NOT IN '_repl_meta'"],
    ["a parenthesised table list", "SELECT * FROM (t, '_repl_meta')"],
    ["a parenthesised single table", "SELECT * FROM ('_repl_meta')"],
    ["a nested parenthesised list", "SELECT * FROM ((t, u), '_repl_meta')"],
    ["a parenthesised list after JOIN", "SELECT * FROM t JOIN ('_repl_meta') ON 1"],
    ["UPDATE OR IGNORE 'table'", "UPDATE OR IGNORE '_repl_meta' SET value = value"],
    ["UPDATE OR REPLACE 'table'", "UPDATE OR REPLACE '_repl_meta' SET value = 'x'"],
    [
      "UPDATE OR ROLLBACK in a trigger",
      "CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE OR ROLLBACK '_repl_meta' SET value = 1; END",
    ],
    [
      "fts5 external content",
      "CREATE VIRTUAL TABLE f USING fts5(key, value, content='_repl_meta')",
    ],
    [
      "fts5 content_rowid next to content",
      "CREATE VIRTUAL TABLE f USING fts5(a, content_rowid='rowid', content='_repl_log')",
    ],
    ["ALTER TABLE ADD 'column'", "ALTER TABLE t ADD '_repl_c' TEXT"],
  ])("flags a string name in %s", (_, sql) => {
    expect(refusedWrite(sql, "RESERVED_NAME").message).toMatch(/^"_repl_\w+" is an internal name/);
  });

  it("reads the same string names in a query", () => {
    for (const sql of [
      "SELECT 1 WHERE ('identity', 'x') IN '_repl_meta'",
      "SELECT * FROM (t, '_repl_meta')",
      "SELECT * FROM ('_repl_meta')",
      "SELECT * FROM t LEFT JOIN ('_repl_meta') ON 1",
    ]) {
      expect(refusedRead(sql, "RESERVED_NAME").details).toEqual({ name: "_repl_meta" });
    }
  });

  it.each(["_repl", "_REPL", "_cf", "__miniflare", "sqlite"])(
    "refuses a virtual table named %s, whose shadow tables would take internal names",
    (name) => {
      for (const sql of [
        `CREATE VIRTUAL TABLE ${name} USING fts5(a)`,
        `CREATE VIRTUAL TABLE IF NOT EXISTS main."${name}" USING rtree(id, x0, x1)`,
      ]) {
        expect(refusedWrite(sql, "RESERVED_NAME").details).toEqual({ name });
      }
    },
  );

  it("still allows what these rules must not catch", () => {
    for (const sql of [
      "CREATE TABLE _repl (a)",
      "CREATE VIRTUAL TABLE _rep USING fts5(a)",
      "CREATE VIRTUAL TABLE docs USING fts5(title, body, tokenize = 'porter unicode61')",
      "CREATE VIRTUAL TABLE docs USING fts5(a, content='notes', content_rowid='id')",
      "SELECT * FROM (SELECT '_repl_log' AS a, 2 AS b)",
      "SELECT * FROM (VALUES ('_repl_log'), ('x'))",
      "SELECT * FROM t WHERE a IN ('_repl_log', '_cf_x')",
      "UPDATE OR IGNORE t SET a = '_repl_log'",
      "INSERT OR REPLACE INTO t VALUES ('_repl_log')",
      "SELECT coalesce(a, '_repl_x') FROM t, u WHERE a = '_repl_y'",
    ]) {
      expect(() => write(sql), sql).not.toThrow();
    }
  });

  it("allows SQLite's deterministic sqlite_offset() in a write", () => {
    expect(rewrite("INSERT INTO t SELECT sqlite_offset(a) FROM u")).toBe(
      "INSERT INTO t SELECT sqlite_offset(a) FROM u",
    );
  });
});

describe("guardWrite: rewriting non-deterministic constructs", () => {
  it("replaces random() with the drawn 64-bit value, parenthesised when negative", () => {
    const guarded = write("INSERT INTO t (id, r) VALUES (?, random())", [7]);
    expect(guarded).toEqual({
      sql: "INSERT INTO t (id, r) VALUES (?, (-42))",
      params: [7],
      kind: "write",
      rewritten: true,
    });
    // Without the parentheses, `a-random()` would become `a--42`: a comment.
    expect(rewrite("UPDATE t SET a = a-random()")).toBe("UPDATE t SET a = a-(-42)");
  });

  it("writes a non-negative random value as a bare literal, spaced from a following word", () => {
    const positive: GuardContext = { ...ctx, randomInt64: () => 9223372036854775807n };
    expect(write("SELECT random()", [], positive).sql).toBe("SELECT 9223372036854775807");
    expect(write("SELECT random()AS r", [], positive).sql).toBe("SELECT 9223372036854775807 AS r");
  });

  it("draws a fresh value for each random() call", () => {
    let next = 0n;
    const counting: GuardContext = { ...ctx, randomInt64: () => ++next };
    expect(write('INSERT INTO t VALUES (random(), RANDOM ( ), "random"())', [], counting).sql).toBe(
      "INSERT INTO t VALUES (1, 2, 3)",
    );
  });

  it("leaves a column or table named random untouched", () => {
    const sql = "UPDATE random SET random = ? WHERE random > 0 AND t.random < 5";
    expect(write(sql, [1])).toEqual({ sql, params: [1], kind: "write", rewritten: false });
    expect(rewrite("INSERT INTO random(random) VALUES (1)")).toBe(
      "INSERT INTO random(random) VALUES (1)",
    );
  });

  it("replaces randomblob(N) with a blob literal of N drawn bytes in uppercase hex", () => {
    expect(rewrite("INSERT INTO t VALUES (randomblob(4))")).toBe(
      "INSERT INTO t VALUES (X'00010203')",
    );
    expect(rewrite("INSERT INTO t VALUES (RandomBlob( 0x10 ))")).toBe(
      "INSERT INTO t VALUES (X'000102030405060708090A0B0C0D0E0F')",
    );
    expect(rewrite("SELECT randomblob(65536)")).toHaveLength("SELECT X''".length + 131072);
  });

  it("refuses randomblob with any argument but an integer literal from 1 to 65536", () => {
    for (const arg of ["0", "65537", "?", "n", "1.5", "-1", "4, 5", "", "(4)"]) {
      const error = refusedWrite(`INSERT INTO t VALUES (randomblob(${arg}))`, "NON_DETERMINISTIC");
      expect(error.details).toEqual({ construct: "randomblob(expr)" });
      expect(error.message).toMatch(/^randomblob\(expr\) is not allowed/);
    }
  });

  it("replaces 'now' arguments of the time functions with the master's clock", () => {
    expect(
      rewrite(
        "INSERT INTO t VALUES (datetime('now'), date('NOW'), time(' now '), " +
          "julianday('now', '+1 day'), unixepoch('now', 'subsec'), strftime('%s', 'now'), " +
          "timediff('now', d))",
      ),
    ).toBe(
      `INSERT INTO t VALUES (datetime(${FULL}), date(${FULL}), time(${FULL}), ` +
        `julianday(${FULL}, '+1 day'), unixepoch(${FULL}, 'subsec'), strftime('%s', ${FULL}), ` +
        `timediff(${FULL}, d))`,
    );
  });

  it("adds the master's clock to time functions called without a time argument", () => {
    expect(rewrite("INSERT INTO t VALUES (datetime(), DATE(), unixepoch( ), julianday())")).toBe(
      `INSERT INTO t VALUES (datetime(${FULL}), DATE(${FULL}), unixepoch(${FULL} ), ` +
        `julianday(${FULL}))`,
    );
    expect(rewrite("UPDATE t SET y = strftime('%Y' ) WHERE id = ?")).toBe(
      `UPDATE t SET y = strftime('%Y', ${FULL} ) WHERE id = ?`,
    );
  });

  it("treats the first argument of strftime as a format, not a time", () => {
    expect(rewrite("SELECT strftime('now')")).toBe(`SELECT strftime('now', ${FULL})`);
  });

  it("leaves deterministic time calls and 'now' outside time functions untouched", () => {
    const sql =
      "INSERT INTO t (date, s) SELECT date(created, '+1 day'), 'now' FROM u WHERE time = 'now'";
    expect(write(sql)).toMatchObject({ sql, rewritten: false });
  });

  it("replaces CURRENT_TIMESTAMP, CURRENT_DATE and CURRENT_TIME in any case", () => {
    expect(rewrite("INSERT INTO t VALUES (CURRENT_TIMESTAMP, current_date, Current_Time, ?)")).toBe(
      "INSERT INTO t VALUES ('2026-01-02 03:04:05', '2026-01-02', '03:04:05', ?)",
    );
  });

  it("keeps parameter positions and all other text byte-for-byte", () => {
    const sql =
      "INSERT INTO \"t\" (a, b, c, d)\n  VALUES (?, /* r */ random(), ?3, :name) -- 'now'\n" +
      "  ON CONFLICT(a) DO UPDATE SET b = datetime('now', ?), c = 'random()';";
    const guarded = write(sql, [1, 2, "x", "+1 day"]);
    expect(guarded.sql).toBe(
      "INSERT INTO \"t\" (a, b, c, d)\n  VALUES (?, /* r */ (-42), ?3, :name) -- 'now'\n" +
        `  ON CONFLICT(a) DO UPDATE SET b = datetime(${FULL}, ?), c = 'random()'`,
    );
    expect(guarded.params).toEqual([1, 2, "x", "+1 day"]);
    expect(guarded.rewritten).toBe(true);
  });

  it("rewrites reads too, so a write request's SELECT stays deterministic", () => {
    expect(write("SELECT random(), CURRENT_DATE")).toEqual({
      sql: "SELECT (-42), '2026-01-02'",
      params: [],
      kind: "read",
      rewritten: true,
    });
  });

  it("refuses a bound parameter equal to 'now' as a time function argument", () => {
    const error = refusedWrite("INSERT INTO t VALUES (datetime(?))", "NON_DETERMINISTIC", [" NOW"]);
    expect(error.details).toEqual({ construct: "datetime(?) with ? bound to 'now'" });
    refusedWrite("INSERT INTO t VALUES (?, date(?2))", "NON_DETERMINISTIC", ["x", "now"]);
    refusedWrite("INSERT INTO t VALUES (:a, date(:b))", "NON_DETERMINISTIC", ["x", "now"]);
  });

  it("allows 'now' as a bound value when it is not a time function argument", () => {
    expect(write("INSERT INTO t VALUES (?, date(?))", ["now", "2026-01-01"]).sql).toBe(
      "INSERT INTO t VALUES (?, date(?))",
    );
    expect(write("INSERT INTO t VALUES (:a, date(:b), :a)", ["now", "2026-01-01"]).kind).toBe(
      "write",
    );
  });
});

describe("guardWrite: refusing non-deterministic constructs", () => {
  it.each([
    ["INSERT INTO t VALUES (last_insert_rowid())", "last_insert_rowid()"],
    ["INSERT INTO t VALUES (changes())", "changes()"],
    ["UPDATE t SET n = total_changes()", "total_changes()"],
    ["INSERT INTO t VALUES (sqlite_version())", "sqlite_version()"],
    ["INSERT INTO t VALUES (sqlite_source_id ( ))", "sqlite_source_id()"],
    ["SELECT load_extension('x')", "load_extension()"],
  ])("refuses %s", (sql, construct) => {
    const error = refusedWrite(sql, "NON_DETERMINISTIC");
    expect(error.details).toEqual({ construct });
    expect(error.message.startsWith(`${construct} is not allowed`)).toBe(true);
  });

  it("does not mistake a table named changes for a call to changes()", () => {
    expect(write("CREATE TABLE changes (id INTEGER)").kind).toBe("ddl");
    expect(write("INSERT INTO changes(id) VALUES (1)").kind).toBe("write");
  });

  it.each([
    ["CREATE TABLE t (id INTEGER, ts TEXT DEFAULT CURRENT_TIMESTAMP)", "CURRENT_TIMESTAMP"],
    ["CREATE TABLE t (d TEXT DEFAULT CURRENT_DATE)", "CURRENT_DATE"],
    ["CREATE TABLE t (id INTEGER DEFAULT (random()))", "random()"],
    ["CREATE TABLE t (d TEXT DEFAULT (datetime('now')))", "datetime('now')"],
    ["ALTER TABLE t ADD COLUMN k BLOB DEFAULT (randomblob(8))", "randomblob(N)"],
    [
      "CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO log VALUES (datetime()); END",
      "datetime()",
    ],
    ["CREATE VIEW v AS SELECT strftime('%s') AS s", "strftime(format)"],
  ])("refuses %s, as DDL would evaluate it on each node", (sql, construct) => {
    const error = refusedWrite(sql, "NON_DETERMINISTIC");
    expect(error.details).toEqual({ construct });
    expect(error.message).toContain("not allowed in CREATE, DROP or ALTER statements");
  });

  it("draws no randomness for a DDL statement it refuses", () => {
    let draws = 0;
    const counting: GuardContext = {
      now: NOW,
      randomInt64: () => BigInt(++draws),
      randomBytes: (n) => new Uint8Array(n + draws++),
    };
    apiError(
      () => write("CREATE TABLE t (a DEFAULT (random()))", [], counting),
      "NON_DETERMINISTIC",
    );
    expect(draws).toBe(0);
  });

  it("allows deterministic time functions in DDL", () => {
    const sql = "CREATE TABLE t (d TEXT, y TEXT AS (strftime('%Y', d)), u INT AS (unixepoch(d)))";
    expect(write(sql)).toEqual({ sql, params: [], kind: "ddl", rewritten: false });
  });
});

describe("NON_DETERMINISTIC_RULES", () => {
  it("documents every construct the guard rewrites or refuses", () => {
    const constructs = NON_DETERMINISTIC_RULES.map((rule) => rule.construct).join("\n");
    for (const name of [
      "random()",
      "randomblob(N)",
      "randomblob(expr)",
      "'now'",
      "CURRENT_TIMESTAMP",
      "CURRENT_DATE",
      "CURRENT_TIME",
      "CREATE, DROP or ALTER",
      "last_insert_rowid()",
      "changes()",
      "total_changes()",
      "sqlite_version()",
      "sqlite_source_id()",
      "load_extension()",
    ]) {
      expect(constructs).toContain(name);
    }
  });

  it("says how each construct is handled, and why", () => {
    for (const rule of NON_DETERMINISTIC_RULES) {
      expect(["rewritten", "refused"]).toContain(rule.handling);
      expect(rule.why.length).toBeGreaterThan(10);
    }
    const random = NON_DETERMINISTIC_RULES.find((rule) => rule.construct === "random()");
    expect(random?.handling).toBe("rewritten");
    const load = NON_DETERMINISTIC_RULES.find((rule) => rule.construct === "load_extension()");
    expect(load?.handling).toBe("refused");
  });
});

describe("guardRead", () => {
  it.each([
    "SELECT * FROM t WHERE id = ?",
    "select 1;",
    "WITH x AS (SELECT 1 AS a) SELECT a FROM x",
    "VALUES (1), (2)",
    "EXPLAIN QUERY PLAN SELECT * FROM t",
    "SELECT replace(a,'x','y') FROM t",
    "SELECT REPLACE (a, 'x', 'y') FROM t",
    "SELECT name, sql FROM sqlite_master WHERE type = 'table'",
    "SELECT sqlite_version(), random(), datetime('now')",
    "SELECT * FROM t WHERE note = '_repl_log; DELETE FROM t'",
  ])("allows %s", (sql) => {
    expect(() => guardRead(sql)).not.toThrow();
  });

  it.each([
    "INSERT INTO t VALUES (1)",
    "UPDATE t SET a = 1",
    "DELETE FROM t",
    "REPLACE INTO t VALUES (1)",
    "CREATE TABLE t (a)",
    "DROP TABLE t",
    "PRAGMA table_info(t)",
    "BEGIN",
    "ATTACH 'x' AS x",
    "WITH x AS (SELECT 1 AS a) DELETE FROM t WHERE a IN x",
    "WITH x AS (SELECT 1 AS a) REPLACE INTO t SELECT a FROM x",
    "WITH x AS (SELECT 1 AS a) INSERT INTO t SELECT a FROM x",
    "EXPLAIN DELETE FROM t",
    "EXPLAIN VACUUM",
    "(SELECT 1)",
  ])("refuses %s as not a read", (sql) => {
    expect(refusedRead(sql, "INVALID_SQL").message).toMatch(/^query accepts only reads/);
  });

  it("refuses a second statement and empty SQL", () => {
    expect(refusedRead("SELECT 1; SELECT 2", "INVALID_SQL").message).toMatch(/one statement/);
    expect(refusedRead("SELECT 1; DELETE FROM t", "INVALID_SQL").message).toMatch(/one statement/);
    expect(refusedRead("  ", "INVALID_SQL").message).toMatch(/empty/);
  });

  it("refuses the replication layer's and Cloudflare's names, quoted or not", () => {
    for (const [sql, name] of [
      ["SELECT * FROM _repl_log", "_repl_log"],
      ['SELECT * FROM "_repl_log"', "_repl_log"],
      ["SELECT * FROM [_cf_x]", "_cf_x"],
      ["SELECT * FROM '_cf_KV'", "_cf_KV"],
    ] as const) {
      expect(refusedRead(sql, "RESERVED_NAME").details).toEqual({ name });
    }
  });
});
