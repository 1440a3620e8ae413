/**
 * SQL the service refuses (anything but one read in a query; what cannot be
 * replicated in an exec) and results too large to send. See bad-input-helpers.ts.
 */
import { describe, expect, it } from "vitest";
import { exec, query } from "./helpers";
import { type Case, type Send, runCases, sweepCluster } from "./bad-input-helpers";

// ---------------------------------------------------------------------------
// SQL the service refuses

describe("query refuses anything but one read", () => {
  const cluster = sweepCluster("query-sql");
  const q = (sql: string, code = "INVALID_SQL"): Case => ({
    name: sql.length > 80 ? `${sql.slice(0, 77)}...` : sql,
    send: (c) => query(c, sql),
    status: 400,
    code,
  });
  runCases(
    [
      q("INSERT INTO t (v) VALUES ('x')"),
      q("UPDATE t SET v = 'x'"),
      q("DELETE FROM t"),
      q("REPLACE INTO t (id, v) VALUES (1, 'x')"),
      q("CREATE TABLE u (a)"),
      q("DROP TABLE t"),
      q("ALTER TABLE t ADD COLUMN w"),
      q("WITH x AS (SELECT 1) DELETE FROM t"),
      q("WITH x AS (SELECT 1) INSERT INTO t (v) SELECT 'x' FROM x"),
      q("SELECT 1; DELETE FROM t"),
      q("SELECT 1 -- comment\n; DELETE FROM t"),
      q("SELECT 1 /* ; */ ; DELETE FROM t"),
      q("SELECT 1 AS a\u0000; DELETE FROM t"),
      q("SELECT 1 /*\u0000; DELETE FROM t; */"),
      q("PRAGMA table_info(t)"),
      q("PRAGMA writable_schema = 1"),
      q("SELECT * FROM pragma_database_list"),
      q("SELECT * FROM pragma_compile_options"),
      q("ATTACH ':memory:' AS other"),
      q("DETACH other"),
      q("VACUUM"),
      q("VACUUM INTO '/tmp/copy.db'"),
      q("ANALYZE"),
      q("REINDEX"),
      q("BEGIN"),
      q("SAVEPOINT a"),
      q("SELECT load_extension('libevil')"),
      q("SELECT * FROM sqlite_dbpage"),
      q("SELECT * FROM dbstat"),
      q("SELECT fts3_tokenizer('simple')"),
      q("SELECT 'unterminated"),
      q("SELECT [unterminated"),
      q("SELECT X'0'"),
      q("SELEC 1"),
      q("SELECT * FROM no_such_table"),
      q("SELECT nope FROM t"),
      q(`SELECT ${"(".repeat(5000)}1${")".repeat(5000)}`),
      q(`SELECT ${"1+".repeat(30_000)}1`),
      q(Array.from({ length: 1000 }, () => "SELECT 1").join(" UNION ALL ")),
      q(`SELECT ${Array.from({ length: 3000 }, (_, i) => `${i} AS c${i}`).join(", ")}`),
      q(`SELECT 1 WHERE 'a' LIKE '${"%a".repeat(30_000)}'`),
      q("SELECT zeroblob(1000000000)"),
      q("SELECT ?", "INVALID_SQL"),
    ],
    cluster,
  );
});

describe("exec refuses what cannot be replicated", () => {
  const cluster = sweepCluster("exec-sql");
  const x = (sql: string, code: string, params: unknown[] = []): Case => ({
    name: sql.length > 80 ? `${sql.slice(0, 77)}...` : sql,
    send: (c) => exec(c, [{ sql, params }]),
    status: 400,
    code,
  });
  runCases(
    [
      x("SELECT load_extension('libevil')", "INVALID_SQL"),
      x("INSERT INTO t (v) VALUES (no_such_function())", "INVALID_SQL"),
      x("BEGIN", "INVALID_SQL"),
      x("COMMIT", "INVALID_SQL"),
      x("SAVEPOINT a", "INVALID_SQL"),
      x("PRAGMA foreign_keys = OFF", "INVALID_SQL"),
      x("ATTACH ':memory:' AS other", "INVALID_SQL"),
      x("VACUUM", "INVALID_SQL"),
      x("INSERT INTO t (v) VALUES ('a'); DELETE FROM t", "INVALID_SQL"),
      x("INSERT INTO t (v) VALUES ('a') /*\u0000; DELETE FROM t; */", "INVALID_SQL"),
      x("INSERT INTO t (v) VALUES ('a') \u0000 DELETE FROM t", "INVALID_SQL"),
      x("INSERT INTO t (v) VALUES ('a", "INVALID_SQL"),
      x("INSERT INTO t (id, v) VALUES (1, 'duplicate key')", "INVALID_SQL"),
      x("INSERT INTO t (v) VALUES (?)", "INVALID_SQL", [1, 2]),
      x("SELECT ?101", "INVALID_SQL"),
      x(`SELECT ${"(".repeat(5000)}1${")".repeat(5000)}`, "INVALID_SQL"),
      {
        name: "good statements then a refused one roll back together",
        send: (c) =>
          exec(c, [
            { sql: "INSERT INTO t (v) VALUES ('first')" },
            { sql: "DELETE FROM t" },
            { sql: "CREATE TABLE _repl_mine (a)" },
          ]),
        status: 400,
        code: "RESERVED_NAME",
      },
      {
        name: "good statements then one SQLite refuses roll back together",
        send: (c) =>
          exec(c, [{ sql: "DELETE FROM t" }, { sql: "INSERT INTO t (nope) VALUES (1)" }]),
        status: 400,
        code: "INVALID_SQL",
      },
    ],
    cluster,
  );
});

describe("a write to a virtual table, which replicas replay as a statement, must be deterministic", () => {
  const cluster = sweepCluster("exec-fts", [
    { sql: "CREATE VIRTUAL TABLE f USING fts5(body)" },
    { sql: "INSERT INTO f (body) VALUES ('hello world')" },
  ]);
  const x = (sql: string, code = "NON_DETERMINISTIC"): Case => ({
    name: sql,
    send: (c) => exec(c, [{ sql }]),
    status: 400,
    code,
  });
  runCases(
    [
      x("INSERT INTO f (body) VALUES (datetime('now'))"),
      x("INSERT INTO f (body) VALUES (random())"),
      x("INSERT INTO f (body) SELECT hex(randomblob(4))"),
      x("INSERT INTO f (body) SELECT name FROM sqlite_master"),
      x("UPDATE f SET body = strftime('%s') WHERE rowid = 1"),
      x("INSERT INTO f (body) VALUES (sqlite_offset(1))", "INVALID_SQL"),
    ],
    cluster,
  );
});

// ---------------------------------------------------------------------------
// Results too large to send

describe("a result too large to send is 413, never a 5xx", () => {
  const cluster = sweepCluster("results");
  const series = (n: number) =>
    `WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s LIMIT ${n})`;
  const tooLarge = (name: string, send: Send): Case => ({
    name,
    send,
    status: 413,
    code: "PAYLOAD_TOO_LARGE",
  });
  runCases(
    [
      tooLarge("a query of 10,001 rows", (c) => query(c, `${series(10_001)} SELECT x FROM s`)),
      tooLarge("a query of 100 rows of 100,000 characters (10 MB)", (c) =>
        query(c, `${series(100)} SELECT x, printf('%.*c', 100000, 'y') AS pad FROM s`),
      ),
      tooLarge("a query of 100 blobs of 100,000 bytes", (c) =>
        query(c, `${series(100)} SELECT zeroblob(100000) AS b FROM s`),
      ),
      tooLarge("a query pinned to a replica, over 8 MiB", (c) =>
        query(c, `${series(100)} SELECT printf('%.*c', 100000, 'y') AS pad FROM s`, {
          replica: "replica-2",
        }),
      ),
      tooLarge("a query of an endless recursive CTE", (c) =>
        query(c, "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s) SELECT x FROM s"),
      ),
      tooLarge("an exec whose SELECT returns an endless recursive CTE", (c) =>
        exec(c, [
          {
            sql: "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s) SELECT x FROM s",
          },
        ]),
      ),
      tooLarge("an exec whose SELECT returns 10 MB", (c) =>
        exec(c, [{ sql: `${series(100)} SELECT printf('%.*c', 100000, 'y') AS pad FROM s` }]),
      ),
      tooLarge("an exec whose INSERT ... RETURNING returns 10 MB", (c) =>
        exec(c, [
          {
            sql: `INSERT INTO t (v) ${series(100)} SELECT printf('%.*c', 100000, 'y') FROM s RETURNING v`,
          },
        ]),
      ),
      tooLarge("an exec of 20 statements of 10,000 rows each (over 8 MiB together)", (c) =>
        exec(
          c,
          Array.from({ length: 20 }, () => ({
            sql: `${series(10_000)} SELECT x, 'padding to make each row about sixty bytes' AS p FROM s`,
          })),
        ),
      ),
    ],
    cluster,
  );

  it("still answers a query just under the limits", async () => {
    const res = await query(cluster.name, `${series(10_000)} SELECT x FROM s`);
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    expect(res.body.rows).toHaveLength(10_000);
    const wide = await query(
      cluster.name,
      `${series(70)} SELECT printf('%.*c', 100000, 'y') AS pad FROM s`,
    );
    expect(wide.status, JSON.stringify(wide.body).slice(0, 300)).toBe(200);
    expect(wide.body.rows).toHaveLength(70);
  });
});
