/**
 * Adversarial reproductions, second round, against exact results and result
 * names after the rewrite to one RETURNING column of cells and names asked of
 * SQLite by probes (core/returning.ts, core/dml-shape.ts,
 * durable-objects/sqlite/{returning-plan,names,compile,read,write}.ts,
 * core/sql-params.ts sentOffset, core/connection-counters.ts).
 *
 * Each test asserts what docs/api.md ("Values", "Connection state") and
 * docs/architecture.md ("Exact results, and the connection a statement reads")
 * promise, and once failed as its comment says; those still marked
 * `it.fails` are the known differences docs/api.md lists. Ground truth is the
 * platform's own SQLite, the statement as sent run on a scratch Durable
 * Object (`rawSql`), as in test/libsql-attack.test.ts. The "held" block keeps
 * attacks that were tried and held.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, exec, freshCluster, query, verify } from "./helpers";
import { sameOnEveryNode } from "./review-helpers";

// biome-ignore lint/suspicious/noExplicitAny: untyped wire JSON under test
type Json = Record<string, any>;

const pipeline = (c: string, requests: unknown[], baton?: string | null) =>
  call<Json>("POST", `/libsql/${c}/v2/pipeline`, { body: { baton, requests } });
const execute = (sql: string, args: unknown[] = []) => ({ type: "execute", stmt: { sql, args } });
const close = { type: "close" };
const int = (value: string | number) => ({ type: "integer", value: String(value) });
const BIG = "9007199254740993";

interface Raw {
  names: string[];
  rows: unknown[][];
}

/**
 * Ground truth: the statements run one by one on the SQLite of a scratch
 * Durable Object, each with `params[i]` (NULLs by default) bound; names, rows
 * (as the runtime gives them) or the error message.
 */
async function rawSql(sql: string[], params: unknown[][] = []): Promise<(Raw | string)[]> {
  const ns = env.LIBSQL_STREAM as unknown as DurableObjectNamespace;
  return runInDurableObject(ns.get(ns.newUniqueId()), (_, state) =>
    sql.map((text, i) => {
      try {
        const cursor = state.storage.sql.exec(text, ...((params[i] ?? []) as SqlStorageValue[]));
        const rows = [...cursor.raw()];
        return { names: cursor.columnNames, rows };
      } catch (error) {
        return `error: ${(error as Error).message}`;
      }
    }),
  );
}
const rawLast = async (sql: string[], params: unknown[][] = []) =>
  (await rawSql(sql, params))[sql.length - 1] as Raw | string;

/** Runs the statements in one stream opened and closed in this request; every one must succeed. */
async function setup(c: string, ...sql: string[]): Promise<void> {
  const r = await pipeline(c, [...sql.map((s) => execute(s)), close]);
  expect(r.status).toBe(200);
  for (const [i, result] of r.body.results.entries()) {
    expect(result.type, `${sql[i]}: ${JSON.stringify(result)}`).toBe("ok");
  }
}

/** The one result of a one-statement request (opened and closed with it). */
async function one(c: string, sql: string, args: unknown[] = []): Promise<Json> {
  const r = await pipeline(c, [execute(sql, args), close]);
  expect(r.status).toBe(200);
  return r.body.results[0];
}

const okResult = (result: Json): Json => {
  expect(result.type, JSON.stringify(result).slice(0, 600)).toBe("ok");
  return result.response.result;
};
const names = (result: Json): string[] => okResult(result).cols.map((c: Json) => c.name);
/** Hrana values as [type, value] pairs: the storage class is part of exactness. */
const typed = (result: Json): unknown[][] =>
  okResult(result).rows.map((row: Json[]) => row.map((v) => [v.type, v.value ?? null]));
const errorOf = (result: Json): string => {
  expect(result.type, JSON.stringify(result).slice(0, 600)).toBe("error");
  return result.error.message;
};
const offsetOf = (message: string) => /at offset (\d+)/.exec(message)?.[1] ?? null;

describe("result names are SQLite's for the SQL as sent (names.ts probes)", () => {
  // Promise: names are SQLite's own for the text as sent. The probe
  // `SELECT * FROM (<text>)` makes SQLite dedupe the subquery's names, which it
  // does ignoring case ("A" after "a" becomes "A:1"); undoSubqueryRenames looks
  // the stem up case-sensitively, so the rename stays. SQLite names the
  // columns a and A (and, for t.a, T.A, a and a).
  it("SELECT 1 AS a, 2 AS A is named a, A; SELECT t.a, T.A is named a, a", async () => {
    const c = freshCluster("x2-case");
    await setup(c, "CREATE TABLE t (a)", "INSERT INTO t VALUES (1)");
    const raw = await rawSql([
      "CREATE TABLE t (a)",
      "SELECT 1 AS a, 2 AS A",
      "SELECT t.a, T.A FROM t",
    ]);
    expect((raw[1] as Raw).names).toEqual(["a", "A"]);
    expect((raw[2] as Raw).names).toEqual(["a", "a"]);
    // Today: ["a","A:1"] and ["a","A:1"].
    expect(names(await one(c, "SELECT 1 AS a, 2 AS A"))).toEqual(["a", "A"]);
    expect(names(await one(c, "SELECT t.a, T.A FROM t"))).toEqual(["a", "a"]);
  });

  // Promise: names as SQLite gives them. A table may have a column named
  // "a:1"; SQLite names `SELECT *` a, a:1. undoSubqueryRenames takes any
  // `<seen>:<digits>` not written in the text for a rename it must undo, so
  // the column comes back named "a" (twice): in the objects format of /query
  // the second column overwrites the first.
  it('SELECT * of a table with columns a and "a:1" is named a, a:1', async () => {
    const c = freshCluster("x2-colon");
    await setup(c, 'CREATE TABLE t (a, "a:1")', "INSERT INTO t VALUES (1, 2)");
    const raw = await rawLast(['CREATE TABLE t (a, "a:1")', "SELECT * FROM t"]);
    expect((raw as Raw).names).toEqual(["a", "a:1"]);
    // Today: ["a","a"]; /query's objects are {"a": 2}.
    expect(names(await one(c, "SELECT * FROM t"))).toEqual(["a", "a:1"]);
  });

  // Promise: names as SQLite gives them. SQLite names a subquery's column
  // "true" or "false" `columnN` (such a name would read as the boolean), so
  // the probe reports column1 where SQLite names the statement's column
  // true: for an alias, and for a table column named "true".
  it('SELECT 1 AS true, and SELECT * of a column named "true", keep the name true', async () => {
    const c = freshCluster("x2-true");
    await setup(c, 'CREATE TABLE t ("true", x)', "INSERT INTO t VALUES (1, 2)");
    const raw = await rawSql([
      'CREATE TABLE t ("true", x)',
      "SELECT 1 AS true, 2 AS false",
      "SELECT * FROM t",
    ]);
    expect((raw[1] as Raw).names).toEqual(["true", "false"]);
    expect((raw[2] as Raw).names).toEqual(["true", "x"]);
    // Today: ["column1","column2"] and ["column1","x"].
    expect(names(await one(c, "SELECT 1 AS true, 2 AS false"))).toEqual(["true", "false"]);
    expect(names(await one(c, "SELECT * FROM t"))).toEqual(["true", "x"]);
  });

  // Promise: names as SQLite gives them. A top-level column that is a COLLATE
  // expression is named by its text ("a COLLATE nocase"); a subquery's column
  // skips the COLLATE and is named "a", which is what the probe reports.
  it("SELECT a COLLATE nocase is named 'a COLLATE nocase'", async () => {
    const c = freshCluster("x2-collate");
    await setup(c, "CREATE TABLE t (a)", "INSERT INTO t VALUES ('x')");
    const raw = await rawLast(["CREATE TABLE t (a)", "SELECT a COLLATE nocase FROM t"]);
    expect((raw as Raw).names).toEqual(["a COLLATE nocase"]);
    // Today: ["a"].
    expect(names(await one(c, "SELECT a COLLATE nocase FROM t"))).toEqual(["a COLLATE nocase"]);
  });

  // Promise: names as SQLite gives them. SQLite names rowid, oid and _rowid_
  // of a table with an INTEGER PRIMARY KEY after that column ("id"); through
  // the subquery probe they come back as written: rowid, oid, _rowid_.
  it("SELECT rowid, oid, _rowid_ of a table with INTEGER PRIMARY KEY id is named id, id, id", async () => {
    const c = freshCluster("x2-rowid");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)", "INSERT INTO t VALUES (1, 2)");
    const raw = await rawLast([
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      "SELECT rowid, oid, _rowid_ FROM t",
    ]);
    expect((raw as Raw).names).toEqual(["id", "id", "id"]);
    // Today: ["rowid","oid","_rowid_"].
    expect(names(await one(c, "SELECT rowid, oid, _rowid_ FROM t"))).toEqual(["id", "id", "id"]);
  });

  // Promise: RETURNING columns named as SQLite names them. The names probe is
  // `WITH <the statement's CTEs> SELECT <items> FROM <target>`, but a DML
  // statement's target is always the table, never a CTE of the same name; in
  // the probe the CTE shadows it. `*` is expanded (starColumns) from the real
  // table, so the values are t's (id, v), named after the CTE's columns.
  it("WITH t(id, w) AS (...) INSERT INTO t ... RETURNING * is named id, v", async () => {
    const c = freshCluster("x2-cte-shadow");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const sql = "WITH t(id, w) AS (SELECT 1, 2) INSERT INTO t (v) VALUES (5) RETURNING *";
    const raw = await rawLast(["CREATE TABLE t (id INTEGER PRIMARY KEY, v)", sql]);
    expect((raw as Raw).names).toEqual(["id", "v"]);
    // Today: ["id","w"] (values 1, 5).
    expect(names(await one(c, sql))).toEqual(["id", "v"]);
  });

  // Promise (libSQL): names are SQLite's; sqld gives `cols` for an empty
  // result too. A statement of a program that runs on the master (here beside
  // a write) loses its column names when it returns no rows (write.ts result()
  // keeps `columns` only with rows): `cols` is [].
  it("an empty SELECT in a program run on the master still has its columns", async () => {
    const c = freshCluster("x2-empty-cols");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)", "CREATE TABLE u (x)");
    const r = await pipeline(c, [
      execute("INSERT INTO u VALUES (1)"),
      execute("SELECT * FROM t"),
      close,
    ]);
    // Today: [] (the same SELECT alone, as a read, is named id, v).
    expect(names(r.body.results[1])).toEqual(["id", "v"]);
  });
});

describe("the statement runs as SQLite runs it (probes and wrappers)", () => {
  // Promise: a query runs as sent. The names probe puts the guard `?G` in
  // front of the text as sent, so SQLite numbers the text's own `?`
  // parameters after it: with 50 `?` the probe needs ?101, past the
  // platform's 100, and the query fails with "too many SQL variables" though
  // the platform's SQLite runs it (and the rewritten statement, ?1..?50 plus
  // the guard ?51, would run too). Any query of 50 to 99 anonymous or named
  // parameters is refused.
  it("a SELECT of 50 `?` parameters runs", async () => {
    const c = freshCluster("x2-params");
    const sql = `SELECT ${Array.from({ length: 50 }, () => "?").join(", ")}`;
    const raw = await rawLast([sql], [Array.from({ length: 50 }, (_, i) => i)]);
    expect((raw as Raw).rows[0]).toHaveLength(50);
    const r = await one(
      c,
      sql,
      Array.from({ length: 50 }, (_, i) => int(i)),
    );
    // Today: {"message":"too many SQL variables at offset 205: SQLITE_ERROR"}
    expect(typed(r)[0]).toHaveLength(50);
  });

  // Promise: a statement within the platform's limit runs. Durable Object
  // SQLite takes statements up to 100,000 bytes; the read wrapper (guard CTE,
  // _repl_q, one cell expression of ~330 bytes per column) pushes a 99.8 KB
  // SELECT past it: SQLITE_TOOBIG, although the platform runs it.
  // Known and open (docs/api.md says what is left): it.fails until fixed.
  it.fails("a 99.8 KB SELECT runs", async () => {
    const c = freshCluster("x2-toobig-q");
    const sql = `SELECT length('${"x".repeat(99_800)}') AS n`;
    expect(await rawLast([sql])).toEqual({ names: ["n"], rows: [[99_800]] });
    // Today: {"message":"statement too long: SQLITE_TOOBIG","code":"SQLITE_TOOBIG"}
    expect(typed(await one(c, sql))).toEqual([[["integer", "99800"]]]);
  });

  // Promise: RETURNING rows are exact (64-bit integers). The rewritten
  // clause makes a 99.8 KB INSERT longer than SQLite's 100,000 bytes; the
  // rewrite fails to compile, the statement runs as sent, and its rows come
  // from the runtime: the INTEGER 9007199254740993 arrives as the float
  // 9007199254740992.
  // Known and open (docs/api.md says what is left): it.fails until fixed.
  it.fails("a 99.8 KB INSERT ... RETURNING id returns the exact 64-bit id", async () => {
    const c = freshCluster("x2-toobig-ret");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const sql = `INSERT INTO t (id, v) VALUES (${BIG}, '${"x".repeat(99_800)}') RETURNING id`;
    const raw = await rawLast(["CREATE TABLE t (id INTEGER PRIMARY KEY, v)", sql]);
    expect((raw as Raw).rows).toHaveLength(1);
    // Today: [["float", 9007199254740992]]
    expect(typed(await one(c, sql))).toEqual([[["integer", BIG]]]);
    expect((await verify(c)).body.agree).toBe(true);
  });

  // Promise: the statement runs as SQLite runs it. A client's CTE named
  // _repl_guard (a CTE is the client's own name, no table) collides with the
  // guard CTE merged into its WITH: "duplicate WITH table name".
  // Known and open (docs/api.md says what is left): it.fails until fixed.
  it.fails("WITH _repl_guard(x) AS (SELECT 5) SELECT x FROM _repl_guard gives 5", async () => {
    const c = freshCluster("x2-guard-cte");
    const sql = "WITH _repl_guard(x) AS (SELECT 5) SELECT x FROM _repl_guard";
    expect(await rawLast([sql])).toEqual({ names: ["x"], rows: [[5]] });
    // Today: {"message":"duplicate WITH table name: _repl_guard: SQLITE_ERROR"}
    expect(typed(await one(c, sql))).toEqual([[["integer", "5"]]]);
  });
});

describe("RETURNING values are exact and evaluated as SQLite evaluates them", () => {
  // Promise: RETURNING rows are exact, the statement's own. SQLite computes
  // RETURNING after each row is written, so `(SELECT count(*) FROM t)` reads
  // 1, 2, 3 in a three-row INSERT (and 1, 0 in a DELETE of two). The rewrite
  // puts the items inside an uncorrelated subquery (`(WITH _repl_cell ...
  // SELECT <cells> FROM _repl_cell)`), which SQLite evaluates once and reuses:
  // every row repeats the first row's value.
  it("RETURNING (SELECT count(*) FROM t) counts row by row, as in SQLite", async () => {
    const c = freshCluster("x2-once");
    await setup(
      c,
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      "CREATE TABLE d (id INTEGER PRIMARY KEY)",
      "INSERT INTO d VALUES (1), (2)",
    );
    const ins = "INSERT INTO t (v) VALUES (1), (2), (3) RETURNING (SELECT count(*) FROM t)";
    const del = "DELETE FROM d RETURNING (SELECT count(*) FROM d)";
    const raw = await rawSql([
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      "CREATE TABLE d (id INTEGER PRIMARY KEY)",
      "INSERT INTO d VALUES (1), (2)",
      ins,
      del,
    ]);
    expect((raw[3] as Raw).rows).toEqual([[1], [2], [3]]);
    expect((raw[4] as Raw).rows).toEqual([[1], [0]]);
    // Today: [1, 1, 1] and [1, 1].
    expect(typed(await one(c, ins)).map((r) => r[0])).toEqual([
      ["integer", "1"],
      ["integer", "2"],
      ["integer", "3"],
    ]);
    expect(typed(await one(c, del)).map((r) => r[0])).toEqual([
      ["integer", "1"],
      ["integer", "0"],
    ]);
    expect((await verify(c)).body.agree).toBe(true);
  });

  // Promise: RETURNING rows are exact. A CTE named like the target makes the
  // names probe read the CTE ("no such column: v"), returningNames gives
  // null, the statement runs as sent and the INTEGER comes back as a float.
  it("WITH t(x) AS (...) INSERT INTO t ... RETURNING v is exact", async () => {
    const c = freshCluster("x2-cte-inexact");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const r = await one(c, `WITH t(x) AS (SELECT 1) INSERT INTO t (v) VALUES (${BIG}) RETURNING v`);
    // Today: [["float", 9007199254740992]]
    expect(typed(r)).toEqual([[["integer", BIG]]]);
  });

  // Promise: RETURNING rows are exact. A client CTE named _repl_cell, read by
  // a RETURNING item, is shadowed by the rewrite's own _repl_cell (a circular
  // reference inside it), so the rewrite does not compile and the statement
  // runs as sent: float.
  // Known and open (docs/api.md says what is left): it.fails until fixed.
  it.fails("a client CTE named _repl_cell read in RETURNING is exact", async () => {
    const c = freshCluster("x2-cell-cte");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const r = await one(
      c,
      `WITH _repl_cell(z) AS (SELECT ${BIG}) INSERT INTO t (v) VALUES (1) RETURNING (SELECT z FROM _repl_cell)`,
    );
    // Today: [["float", 9007199254740992]]
    expect(typed(r)).toEqual([[["integer", BIG]]]);
  });
});

describe("errors are SQLite's for the SQL as sent (sentOffset)", () => {
  // Promise: an error's "at offset N" is SQLite's for the SQL as sent. SQLite
  // counts bytes; sentOffset adds the first token's start in UTF-16 units, so
  // a comment holding "é" in front shifts it by one: 15 where SQLite says 16.
  it("a leading comment with a multibyte character keeps SQLite's offset", async () => {
    const c = freshCluster("x2-off-comment");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const sql = "/* é */ SELECT nosuch FROM t";
    const raw = await rawLast(["CREATE TABLE t (id INTEGER PRIMARY KEY, v)", sql]);
    expect(offsetOf(String(raw))).toBe("16");
    // Today: "no such column: nosuch at offset 15".
    expect(offsetOf(errorOf(await one(c, sql)))).toBe("16");
  });

  // Same unit mismatch past a rewrite: the byte offset of `nosuch` (31) is
  // compared with the rewrite's UTF-16 start (`?` → CAST(?1 AS INTEGER) at
  // 29), falls "inside" it and is moved to the rewrite's start: 29.
  it("multibyte text before an error and a bound integer keeps SQLite's offset", async () => {
    const c = freshCluster("x2-off-utf8");
    const sql = "SELECT 'éééééééééé', nosuch, ?";
    const raw = await rawLast([sql], [[1]]);
    expect(offsetOf(String(raw))).toBe("31");
    // Today: "no such column: nosuch at offset 29".
    expect(offsetOf(errorOf(await one(c, sql, [int(1)])))).toBe("31");
  });

  // Promise: SQLite's error, "at offset N" included, for the SQL as sent. On
  // a cluster every table carries capture triggers, and with them SQLite
  // reports an INSERT's RETURNING errors with no offset at all: the client
  // gets "no such column: nosuch" where SQLite says "... at offset 39".
  // (UPDATE and DELETE keep theirs.)
  // Known and open (docs/api.md says what is left): it.fails until fixed.
  it.fails("INSERT ... RETURNING nosuch says at offset 39", async () => {
    const c = freshCluster("x2-off-insert");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const sql = "INSERT INTO t (v) VALUES (1) RETURNING nosuch";
    const raw = await rawLast(["CREATE TABLE t (id INTEGER PRIMARY KEY, v)", sql]);
    expect(offsetOf(String(raw))).toBe("39");
    // Today: "no such column: nosuch: SQLITE_ERROR".
    expect(offsetOf(errorOf(await one(c, sql)))).toBe("39");
    // Also for the upsert alias and excluded.: offsets 99 and 94 in SQLite, none here.
  });
});

describe("connection counters: never the node's connection", () => {
  // Promise (docs/api.md "Connection state"): last_insert_rowid() reads the
  // stream's counters, "never those of the node's shared connection"; a fresh
  // connection reads 0. In an INSERT's RETURNING the call is left to SQLite,
  // which moves it only when a row goes into a rowid table: an INSERT into a
  // WITHOUT ROWID table, or an upsert that updates, reads whatever the node's
  // connection last inserted (its own bookkeeping, another client's write).
  // Known and open (docs/api.md says what is left): it.fails until fixed.
  it.fails("RETURNING last_insert_rowid() in a WITHOUT ROWID insert or an upsert's update reads 0 on a fresh request", async () => {
    const c = freshCluster("x2-leak");
    await setup(
      c,
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      "CREATE TABLE w (k PRIMARY KEY, v) WITHOUT ROWID",
    );
    // Another client's writes move the node's connection.
    await setup(c, "INSERT INTO t (id, v) VALUES (777, 1)");
    const raw = await rawSql([
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      "CREATE TABLE w (k PRIMARY KEY, v) WITHOUT ROWID",
      "INSERT INTO w VALUES ('a', 1) RETURNING last_insert_rowid()",
    ]);
    expect((raw[2] as Raw).rows).toEqual([[0]]);
    const w = await one(c, "INSERT INTO w VALUES ('a', 1) RETURNING last_insert_rowid()");
    const u = await one(
      c,
      "INSERT INTO t VALUES (777, 2) ON CONFLICT (id) DO UPDATE SET v = 3 RETURNING last_insert_rowid()",
    );
    // Today: the node connection's rowid, not 0 (e.g. [["integer","777"]] or a log rowid).
    expect([typed(w), typed(u)]).toEqual([[[["integer", "0"]]], [[["integer", "0"]]]]);
    expect((await verify(c)).body.agree).toBe(true);
  });
});

describe("held", () => {
  it("names SQLite gives alike through the probe: +a, likely(a), aliases with ':', duplicates, unicode", async () => {
    const c = freshCluster("x2-held-names");
    await setup(c, 'CREATE TABLE t (a, "é")', "INSERT INTO t VALUES (1, 2)");
    const sqls = [
      'SELECT +a, likely(a), unlikely(a), "é", (a) FROM t',
      'SELECT a AS "a:1", a, a FROM t',
      'SELECT a, a, a AS "a:1" FROM t',
      "SELECT a, a, a, a, a, a FROM t",
      "VALUES (1, 2)",
      "SELECT * FROM t AS x JOIN t AS y USING (a)",
    ];
    const raw = await rawSql(['CREATE TABLE t (a, "é")', "INSERT INTO t VALUES (1, 2)", ...sqls]);
    for (const [i, sql] of sqls.entries()) {
      expect(names(await one(c, sql)), sql).toEqual((raw[i + 2] as Raw).names);
    }
    // The fallback (the statement itself, parameters NULL) with parameters.
    expect(names(await one(c, "SELECT ? AS a, ? AS a, 'a:1'", [int(1), int(2)]))).toEqual([
      "a",
      "a",
      "'a:1'",
    ]);
  });

  it("RETURNING: correlated subqueries, duplicates and 'v:1', 100-column RETURNING *, ?NNN/:a/@a/$a items, exact", async () => {
    const c = freshCluster("x2-held-ret");
    const cols = Array.from({ length: 99 }, (_, i) => `c${i}`).join(", ");
    await setup(
      c,
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      `CREATE TABLE w (id INTEGER PRIMARY KEY, ${cols})`,
      "INSERT INTO t VALUES (1, 1), (2, 2), (3, 3)",
    );
    const up = await one(c, "UPDATE t SET v = v + 10 RETURNING id, (SELECT sum(v) FROM t)");
    expect(typed(up).map((r) => r[1])).toEqual([
      ["integer", "16"],
      ["integer", "26"],
      ["integer", "36"],
    ]);
    const dup = await one(c, `UPDATE t SET v = ${BIG} WHERE id = 1 RETURNING v AS "v:1", v, v`);
    expect(names(dup)).toEqual(["v:1", "v", "v"]);
    expect(typed(dup)).toEqual([
      [
        ["integer", BIG],
        ["integer", BIG],
        ["integer", BIG],
      ],
    ]);
    const wide = await one(c, `INSERT INTO w (id, c98) VALUES (${BIG}, 2.0) RETURNING *`);
    expect(names(wide)).toHaveLength(100);
    expect(typed(wide)[0]?.[0]).toEqual(["integer", BIG]);
    expect(typed(wide)[0]?.[99]).toEqual(["float", 2]);
    const r = await pipeline(c, [
      {
        type: "execute",
        stmt: {
          sql: "UPDATE t SET v = :a WHERE id = 2 RETURNING ?1, :a, @b, $c, v",
          named_args: [
            { name: ":a", value: int(BIG) },
            { name: "@b", value: { type: "float", value: 2 } },
            { name: "$c", value: { type: "text", value: "é" } },
          ],
        },
      },
      close,
    ]);
    expect(names(r.body.results[0])).toEqual(["?1", ":a", "@b", "$c", "v"]);
    expect(typed(r.body.results[0])).toEqual([
      [
        ["integer", BIG],
        ["integer", BIG],
        ["float", 2],
        ["text", "é"],
        ["integer", BIG],
      ],
    ]);
    await sameOnEveryNode(c, "SELECT * FROM t ORDER BY id");
  });

  it("names follow DDL in the same transaction, and on a replica after another request's ALTER", async () => {
    const c = freshCluster("x2-held-cache");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)", "INSERT INTO t VALUES (1, 1)");
    const r = await pipeline(c, [
      execute("BEGIN"),
      execute("SELECT * FROM t"),
      execute("INSERT INTO t (v) VALUES (2) RETURNING *"),
      execute("ALTER TABLE t ADD COLUMN z DEFAULT 9"),
      execute("SELECT * FROM t"),
      execute("INSERT INTO t (v) VALUES (3) RETURNING *"),
      execute("ROLLBACK"),
      execute("SELECT * FROM t"),
      execute("INSERT INTO t (v) VALUES (4) RETURNING *"),
      close,
    ]);
    const got = [1, 2, 4, 5, 7, 8].map((i) => names(r.body.results[i]));
    expect(got).toEqual([
      ["id", "v"],
      ["id", "v"],
      ["id", "v", "z"],
      ["id", "v", "z"],
      ["id", "v"],
      ["id", "v"],
    ]);
    const before = await query(c, "SELECT * FROM t", { format: "arrays" });
    expect((before.body as Json).columns).toEqual(["id", "v"]);
    await exec(c, [{ sql: "ALTER TABLE t RENAME COLUMN v TO w" }]);
    for (let i = 0; i < 3; i++) {
      const after = await query(c, "SELECT * FROM t", { format: "arrays" });
      expect((after.body as Json).columns).toEqual(["id", "w"]);
    }
    expect((await verify(c)).body.agree).toBe(true);
  });

  it("counters: multi-row VALUES and INSERT ... SELECT read last_insert_rowid() as SQLite does; REPLACE counts 1", async () => {
    const c = freshCluster("x2-held-counters");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v UNIQUE)");
    const r = await pipeline(c, [
      execute(
        "INSERT INTO t (v) VALUES (last_insert_rowid()), (last_insert_rowid() + 10) RETURNING v",
      ),
      execute("INSERT INTO t (v) SELECT last_insert_rowid() * 100 + id FROM t RETURNING v"),
      execute("REPLACE INTO t VALUES (1, 10)"),
      execute("SELECT changes(), total_changes(), last_insert_rowid()"),
      close,
    ]);
    const raw = await rawSql([
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v UNIQUE)",
      "INSERT INTO t (v) VALUES (last_insert_rowid()), (last_insert_rowid() + 10) RETURNING v",
      "INSERT INTO t (v) SELECT last_insert_rowid() * 100 + id FROM t RETURNING v",
      "REPLACE INTO t VALUES (1, 10)",
      "SELECT changes(), total_changes(), last_insert_rowid()",
    ]);
    for (const i of [0, 1, 3]) {
      expect(
        typed(r.body.results[i]).map((row) => row.map((v) => Number((v as unknown[])[1]))),
      ).toEqual((raw[i + 1] as Raw).rows);
    }
    await sameOnEveryNode(c, "SELECT * FROM t ORDER BY id");
  });

  it("errors keep SQLite's offsets with leading whitespace, EXPLAIN, counters bound, and in UPDATE/DELETE RETURNING", async () => {
    const c = freshCluster("x2-held-offsets");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const sqls = [
      "  \n SELECT nosuch FROM t",
      "EXPLAIN SELECT nosuch FROM t",
      "SELECT last_insert_rowid(), 'éééé', nosuch",
      "UPDATE t SET v = 1 RETURNING nosuch",
      "WITH g(x) AS (SELECT 1) DELETE FROM t RETURNING nosuch",
      "SELECT 'éééééééééé', nosuch, 1",
    ];
    const raw = await rawSql(["CREATE TABLE t (id INTEGER PRIMARY KEY, v)", ...sqls]);
    for (const [i, sql] of sqls.entries()) {
      expect(offsetOf(errorOf(await one(c, sql))), sql).toBe(offsetOf(String(raw[i + 1])));
    }
  });

  it("RETURNING past the row budget is 413 with nothing written; 10,000 rows come back exact", async () => {
    const c = freshCluster("x2-held-budget");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const gen = (n: number) =>
      `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${n}) ` +
      `INSERT INTO t (v) SELECT i + ${BIG} - 1 FROM s RETURNING v`;
    const over = await exec(c, [{ sql: gen(10_001) }]);
    expect(over.status).toBe(413);
    const ok = await one(c, gen(10_000));
    const rows = typed(ok);
    expect(rows).toHaveLength(10_000);
    expect(rows[0]).toEqual([["integer", BIG]]);
    await sameOnEveryNode(c, "SELECT count(*), min(v), max(v) FROM t");
  });
  it("the breaking writes above still replicate identically (verify agrees)", async () => {
    const c = freshCluster("x2-held-verify");
    await setup(
      c,
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      "CREATE TABLE w (k PRIMARY KEY, v) WITHOUT ROWID",
    );
    for (const sql of [
      "INSERT INTO t (v) VALUES (1), (2), (3) RETURNING (SELECT count(*) FROM t)",
      `INSERT INTO t (id, v) VALUES (${BIG}, '${"x".repeat(99_800)}') RETURNING id`,
      "WITH t(id, w) AS (SELECT 1, 2) INSERT INTO t (v) VALUES (5) RETURNING *",
      `WITH t(x) AS (SELECT 1) INSERT INTO t (v) VALUES (${BIG}) RETURNING v`,
      `WITH _repl_cell(z) AS (SELECT ${BIG}) INSERT INTO t (v) VALUES (1) RETURNING (SELECT z FROM _repl_cell)`,
      "INSERT INTO w VALUES ('a', 1) RETURNING last_insert_rowid()",
      "INSERT INTO t VALUES (1, 2) ON CONFLICT (id) DO UPDATE SET v = last_insert_rowid() RETURNING last_insert_rowid()",
      "DELETE FROM t WHERE id = 2 RETURNING (SELECT count(*) FROM t)",
    ]) {
      okResult(await one(c, sql));
    }
    await sameOnEveryNode(c, "SELECT id, v FROM t UNION ALL SELECT k, v FROM w ORDER BY 1, 2");
  });
});
