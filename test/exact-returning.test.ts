/**
 * Rows a write returns (RETURNING) are as exact as rows a query returns, and
 * named as SQLite names them; last_insert_rowid(), changes() and
 * total_changes() read the request's own counters, never the node's shared
 * connection; column names are those of the SQL as sent, not of the
 * parameter rewrite.
 */
import { describe, expect, it } from "vitest";
import { call as request, exec, freshCluster, query } from "./helpers";
import { ok, sameOnEveryNode } from "./review-helpers";

interface ExecBody {
  results: { rows?: unknown[]; columns?: string[]; rowsWritten: number; lastRowId: unknown }[];
}

async function returning(c: string, sql: string, params: unknown[] = []) {
  const res = await exec(c, [{ sql, params }]);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return (res.body as unknown as ExecBody).results[0];
}

async function call(c: string, sql: string, params: unknown[]) {
  const res = await exec(c, [{ sql, params }]);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as unknown as ExecBody;
}

const BIG = "9007199254740993";

describe("RETURNING values are exact", () => {
  it("64-bit integers, integral REALs, -0.0, infinities, blobs and odd text come back exactly", async () => {
    const c = freshCluster("ret-values");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, r, z, inf, b, x)");
    const res = await exec(c, [
      {
        sql: "INSERT INTO t VALUES (?, 2.0, ?, 9e999, x'00ff', CAST(x'ff41' AS TEXT)) RETURNING id, r, z, inf, b, x, -inf",
        params: [{ int: BIG }, { real: "-0.0" }],
      },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const row = (res.body as unknown as ExecBody).results[0]?.rows?.[0];
    expect(row).toEqual({
      id: { int: BIG },
      r: { real: 2 },
      z: { real: "-0.0" },
      inf: { real: "Infinity" },
      b: { base64: "AP8=" },
      x: expect.anything(),
      "-inf": { real: "-Infinity" },
    });
    // The same row read by a query: RETURNING and SELECT agree value for value.
    const read = await query(c, "SELECT id, r, z, inf, b, x, -inf FROM t", { replica: "master" });
    expect(read.body.rows[0]).toEqual(row);
  });

  it("the largest and smallest 64-bit integers survive UPDATE and DELETE ... RETURNING", async () => {
    const c = freshCluster("ret-extremes");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)");
    await ok(c, "INSERT INTO t VALUES (1, 0)");
    const up = await returning(c, "UPDATE t SET v = 9223372036854775807 RETURNING v, v - 1");
    expect(up?.rows).toEqual([
      { v: { int: "9223372036854775807" }, "v - 1": { int: "9223372036854775806" } },
    ]);
    const del = await returning(c, "DELETE FROM t RETURNING -v - 1 AS lowest");
    expect(del?.rows).toEqual([{ lowest: { int: "-9223372036854775808" } }]);
  });

  it("names are SQLite's: column names, aliases with or without AS, expression text, `*` with generated columns", async () => {
    const c = freshCluster("ret-names");
    await ok(c, "CREATE TABLE t (a INTEGER PRIMARY KEY, b, c GENERATED ALWAYS AS (b + 1))");
    const res = await call(
      c,
      'INSERT INTO t (b) VALUES (2.0) RETURNING *, t.b, b   +  1, b x, b AS "y z", (b), rowid, typeof(b)',
      [],
    );
    expect(res.results[0]?.rows).toEqual([
      {
        a: 1,
        b: { real: 2 },
        c: { real: 3 },
        "b   +  1": { real: 3 },
        x: { real: 2 },
        "y z": { real: 2 },
        "typeof(b)": "real",
      },
    ]);
    const arr = await exec(c, [
      {
        sql: "INSERT INTO t (b) VALUES (5) RETURNING *, b, rowid, b x, (SELECT count(*) FROM t) n",
      },
    ]);
    const body = arr.body as unknown as ExecBody;
    expect(body.results[0]?.rows).toEqual([{ a: 2, b: 5, c: 6, x: 5, n: 2 }]);
  });

  it("duplicate names survive in the arrays format, values in order", async () => {
    const c = freshCluster("ret-arrays");
    await ok(c, "CREATE TABLE t (a INTEGER PRIMARY KEY, b)");
    await ok(c, "INSERT INTO t (b) VALUES (1.5)");
    await ok(c, "INSERT INTO t (b) VALUES (2.5)");
    const arrRes = await fetchArrays(c, "INSERT INTO t (b) VALUES (?) RETURNING b, b, a, *", [
      { int: BIG },
    ]);
    expect(arrRes.columns).toEqual(["b", "b", "a", "a", "b"]);
    expect(arrRes.rows).toEqual([[{ int: BIG }, { int: BIG }, 3, 3, { int: BIG }]]);
  });

  it("upserts, WITH ... INSERT, INSERT ... SELECT of many rows and subqueries return exact rows", async () => {
    const c = freshCluster("ret-forms");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    await ok(c, "INSERT INTO t VALUES (1, 1)");
    const up = await returning(
      c,
      "INSERT INTO t VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET v = excluded.v * 1.0 RETURNING id, v",
      [{ int: "3" }],
    );
    expect(up?.rows).toEqual([{ id: 1, v: { real: 3 } }]);
    const withInsert = await returning(
      c,
      "WITH src (x) AS (VALUES (?), (?)) INSERT INTO t (v) SELECT x FROM src RETURNING v, (SELECT max(x) FROM src) AS m",
      [{ int: BIG }, { real: 2 }],
    );
    expect(withInsert?.rows).toEqual([
      { v: { int: BIG }, m: { int: BIG } },
      { v: { real: 2 }, m: { int: BIG } },
    ]);
    const many = await returning(
      c,
      "INSERT INTO t (v) SELECT value * 1.0 FROM json_each('[1,2,3,4,5,6,7,8,9,10]') RETURNING v",
    );
    expect(many?.rows?.length).toBe(10);
    expect(many?.rows?.[9]).toEqual({ v: { real: 10 } });
    await sameOnEveryNode(c, "SELECT id, v FROM t ORDER BY id");
  });

  it("a RETURNING clause SQLite refuses gets SQLite's own error, nothing written", async () => {
    const c = freshCluster("ret-errors");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    for (const sql of [
      "INSERT INTO t (v) VALUES (1) RETURNING t.*",
      "INSERT INTO t (v) VALUES (1) RETURNING",
      "INSERT INTO t (v) VALUES (1) RETURNING v,",
      "INSERT INTO t (v) VALUES (1) RETURNING nope",
      "INSERT INTO t (v) VALUES (1) RETURNING count(*)",
    ]) {
      const res = await exec(c, [{ sql }]);
      expect(res.status, `${sql}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(JSON.stringify(res.body)).not.toContain("_repl_cell");
    }
    const read = await query(c, "SELECT count(*) AS n FROM t", { replica: "master" });
    expect(read.body.rows).toEqual([{ n: 0 }]);
  });
});

async function fetchArrays(c: string, sql: string, params: unknown[]) {
  const res = await execArrays(c, sql, params);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const first = (res.body as unknown as ExecBody).results[0];
  return { columns: first?.columns, rows: first?.rows };
}

function execArrays(c: string, sql: string, params: unknown[]) {
  return request("POST", `/v1/clusters/${c}/exec`, {
    body: { statements: [{ sql, params }], format: "arrays" },
  });
}

describe("connection counters belong to the request", () => {
  it("a request's last_insert_rowid(), changes() and total_changes() start at 0 and follow its own statements", async () => {
    const c = freshCluster("counters-exec");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    await ok(c, "INSERT INTO t VALUES (4242, 'someone else')");
    const res = await call(
      c,
      "SELECT last_insert_rowid() AS r, changes() AS c, total_changes() AS t",
      [],
    );
    expect(res.results[0]?.rows).toEqual([{ r: 0, c: 0, t: 0 }]);
    const seq = await exec(c, [
      { sql: "INSERT INTO t (v) VALUES ('a'), ('b')" },
      { sql: "SELECT last_insert_rowid() AS r, changes() AS c, total_changes() AS t" },
      { sql: "UPDATE t SET v = v || '!' WHERE id > 4242" },
      { sql: "CREATE TABLE u (x)" },
      { sql: "SELECT last_insert_rowid() AS r, changes() AS c, total_changes() AS t" },
      {
        sql: "INSERT INTO t (v) VALUES (last_insert_rowid()) RETURNING v, last_insert_rowid() AS r",
      },
    ]);
    expect(seq.status, JSON.stringify(seq.body)).toBe(200);
    const results = (seq.body as unknown as ExecBody).results;
    expect(results[0]?.lastRowId).toBe(4244);
    expect(results[1]?.rows).toEqual([{ r: 4244, c: 2, t: 2 }]);
    expect(results[4]?.rows).toEqual([{ r: 4244, c: 2, t: 4 }]);
    // In RETURNING, SQLite has already moved last_insert_rowid() to the row inserted.
    expect(results[5]?.rows).toEqual([{ v: 4244, r: 4245 }]);
    await sameOnEveryNode(c, "SELECT id, v FROM t ORDER BY id");
  });

  it("a query reads fresh counters, on the master and on a replica", async () => {
    const c = freshCluster("counters-query");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    await ok(c, "INSERT INTO t VALUES (77, 'x')");
    for (const replica of ["master", "replica-1"]) {
      const read = await query(c, "SELECT last_insert_rowid(), changes(), total_changes()", {
        replica,
      });
      expect(read.status, JSON.stringify(read.body)).toBe(200);
      expect(read.body.rows).toEqual([
        { "last_insert_rowid()": 0, "changes()": 0, "total_changes()": 0 },
      ]);
    }
  });

  it("an upsert that updates, and an insert into a WITHOUT ROWID table, leave last_insert_rowid() alone", async () => {
    const c = freshCluster("counters-upsert");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    await ok(c, "CREATE TABLE w (k TEXT PRIMARY KEY, v) WITHOUT ROWID");
    const res = await exec(c, [
      { sql: "INSERT INTO t VALUES (10, 'a')" },
      { sql: "INSERT INTO t VALUES (10, 'b') ON CONFLICT (id) DO UPDATE SET v = excluded.v" },
      { sql: "INSERT INTO w VALUES ('k', 1)" },
      { sql: "SELECT last_insert_rowid() AS r, changes() AS c" },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const results = (res.body as unknown as ExecBody).results;
    expect(results.map((r) => r.lastRowId)).toEqual([10, null, null, null]);
    expect(results[3]?.rows).toEqual([{ r: 10, c: 1 }]);
  });

  it("a counter in a write replicas replay as a statement (fts5) is bound, so they agree", async () => {
    const c = freshCluster("counters-fts");
    await ok(c, "CREATE VIRTUAL TABLE f USING fts5(body)");
    const res = await exec(c, [
      { sql: "INSERT INTO f (body) VALUES ('a')" },
      { sql: "INSERT INTO f (body) VALUES (last_insert_rowid() || ' ' || changes())" },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await sameOnEveryNode(c, "SELECT rowid, body FROM f ORDER BY rowid");
    const read = await query(c, "SELECT body FROM f WHERE rowid = 2", { replica: "master" });
    expect(read.body.rows).toEqual([{ body: "1 1" }]);
  });

  it("names such as changes(), a table named changes and a column named last_insert_rowid are left alone", async () => {
    const c = freshCluster("counters-names");
    await ok(c, "CREATE TABLE changes (last_insert_rowid, total_changes)");
    const res = await exec(c, [
      { sql: "INSERT INTO changes (last_insert_rowid, total_changes) VALUES (5, 6)" },
      { sql: "SELECT last_insert_rowid, changes.total_changes, changes() FROM changes" },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const results = (res.body as unknown as ExecBody).results;
    expect(results[1]?.rows).toEqual([{ last_insert_rowid: 5, total_changes: 6, "changes()": 1 }]);
  });
});

describe("column names are those of the SQL as sent", () => {
  it("parameters in unaliased expressions keep their written form", async () => {
    const c = freshCluster("names-params");
    const res = await execArrays(c, "SELECT ?, :x, ?5 + 1, '?1', @y || ?", [
      { int: "1" },
      "a",
      null,
      null,
      { int: "5" },
      "b",
      "c",
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((res.body as unknown as ExecBody).results[0]?.columns).toEqual([
      "?",
      ":x",
      "?5 + 1",
      "'?1'",
      "@y || ?",
    ]);
    const read = await queryArrays(c, "SELECT ? + 1, last_insert_rowid()", [{ int: "41" }]);
    expect(read.columns).toEqual(["? + 1", "last_insert_rowid()"]);
    expect(read.rows).toEqual([[42, 0]]);
  });
});

async function queryArrays(c: string, sql: string, params: unknown[]) {
  const res = await request<{ columns: string[]; rows: unknown[][] }>(
    "POST",
    `/v1/clusters/${c}/query`,
    { body: { sql, params, format: "arrays", replica: "master" } },
  );
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}
