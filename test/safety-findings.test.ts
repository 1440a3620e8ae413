/**
 * Regressions for the review that broke the cluster's promises with a data
 * token: every finding, reproduced through the front door. Each would fail on
 * a guard that reads the SQL text itself, and on statement shipping.
 */
import { describe, expect, it } from "vitest";
import { call, exec, freshCluster, patchTunables, query } from "./helpers";
import { NODES, addReplica, converged, rowsOn, sameEverywhere } from "./node-images";

async function cluster(prefix: string, ddl: string): Promise<string> {
  const c = freshCluster(prefix);
  const res = await exec(c, [{ sql: ddl }]);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return c;
}

describe("the guard decides on SQLite's compiled program, 4 replicas", () => {
  it("a TCL variable cannot hide a UNION that reads internal state", async () => {
    const c = await cluster("tcl-read", "CREATE TABLE t (a)");
    for (const target of ["_repl_results", "_repl_changes"]) {
      for (const sigil of ["$", ":", "@", "#"]) {
        const sql = `SELECT a FROM t WHERE a = ${sigil}a(') UNION ALL SELECT 'leak' FROM ${target} --'`;
        const res = await query(c, sql, { params: [0], replica: "master" });
        expect(res.status, JSON.stringify(res.body)).toBe(400);
        expect(JSON.stringify(res.body)).not.toContain("leak");
      }
    }
  });

  it("a TCL variable cannot make a write pass as a read on the master or a replica", async () => {
    const c = await cluster("tcl-write", "CREATE TABLE t (a)");
    expect((await exec(c, [{ sql: "INSERT INTO t (a) VALUES (1), (2)" }])).status).toBe(200);
    for (const node of ["replica-1", "master"]) {
      const del = await query(c, "WITH x AS (SELECT $a(')) DELETE FROM t WHERE a = 1 --')", {
        params: [0],
        replica: node,
      });
      expect(del.status, JSON.stringify(del.body)).toBe(400);
      expect((del.body as unknown as { error: { code: string } }).error.code).toBe("INVALID_SQL");
    }
    expect(await sameEverywhere(c, "SELECT a FROM t ORDER BY a")).toEqual([[1], [2]]);
  });

  it("a TCL variable cannot smuggle a read of internal state into a write", async () => {
    const c = await cluster("tcl-exec", "CREATE TABLE t (a)");
    const res = await exec(c, [
      {
        sql: "WITH x AS (SELECT $a(')) INSERT INTO t (a) SELECT 100 + count(*) FROM _repl_changes --')",
        params: [0],
      },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect((res.body as { error: { code: string } }).error.code).toBe("RESERVED_NAME");
    expect(await sameEverywhere(c, "SELECT count(*) FROM t")).toEqual([[0]]);
  });

  it("a second statement hidden from the tokenizer is refused by the platform before it runs", async () => {
    // The guard parameter in front of every statement makes workerd refuse a
    // multi-statement text: this text is one statement only if the tokenizer is right.
    const c = await cluster("multi", "CREATE TABLE t (a)");
    expect((await exec(c, [{ sql: "INSERT INTO t (a) VALUES (1)" }])).status).toBe(200);
    for (const sql of [
      "SELECT 1; DELETE FROM t",
      "SELECT $v(;) ; DELETE FROM t",
      "SELECT 1 /* */; DELETE FROM t",
    ]) {
      const res = await query(c, sql, { replica: "replica-2" });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
    }
    expect(await sameEverywhere(c, "SELECT a FROM t")).toEqual([[1]]);
  });
});

describe("writes that SQLite computes differently on each node replicate exactly, 4 replicas", () => {
  it.each([
    ["julianday('n'||'ow')", "INSERT INTO t (v) VALUES (julianday('n'||'ow'))"],
    ["unixepoch(('now'),'subsec')", "INSERT INTO t (v) VALUES (unixepoch(('now'),'subsec'))"],
    ["julianday(trim(' now '))", "INSERT INTO t (v) VALUES (julianday(trim(' now ')))"],
    ["random() beyond 2^53", "INSERT INTO t (v) VALUES (random()), (random()), (random())"],
    ["randomblob(16)", "INSERT INTO t (v) VALUES (randomblob(16))"],
    ["changes()", "INSERT INTO t (v) VALUES (changes())"],
    ["last_insert_rowid()", "INSERT INTO t (v) VALUES (last_insert_rowid())"],
    ["pragma_table_list", "INSERT INTO t (v) SELECT count(*) FROM pragma_table_list"],
    ["pragma_table_info", "INSERT INTO t (v) SELECT count(*) FROM pragma_table_info('_repl_log')"],
    ["sqlite_schema", "INSERT INTO t (v) SELECT group_concat(rootpage) FROM sqlite_schema"],
  ])("%s", async (_, sql) => {
    const c = await cluster("nondet", "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const res = await exec(c, [{ sql }]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const rows = await sameEverywhere(c, "SELECT id, v, typeof(v) FROM t ORDER BY id");
    expect(rows.length).toBeGreaterThan(0);
  });

  it("UPDATE t SET v = julianday(label) where label holds 'now'", async () => {
    const c = await cluster("label-now", "CREATE TABLE t (id INTEGER PRIMARY KEY, label, v)");
    await exec(c, [{ sql: "INSERT INTO t (label) VALUES ('now'), ('2020-01-01')" }]);
    const res = await exec(c, [{ sql: "UPDATE t SET v = julianday(label)" }]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const rows = await sameEverywhere(c, "SELECT id, v FROM t ORDER BY id");
    expect(rows[1]).toEqual([2, 2458849.5]);
  });

  it("a column DEFAULT (julianday('n'||'ow')) and DEFAULT CURRENT_TIMESTAMP", async () => {
    const c = await cluster(
      "default-now",
      "CREATE TABLE t (id INTEGER PRIMARY KEY, a DEFAULT (julianday('n'||'ow')), b TEXT DEFAULT CURRENT_TIMESTAMP)",
    );
    for (let i = 0; i < 3; i++) {
      const res = await exec(c, [{ sql: "INSERT INTO t (id) VALUES (?)", params: [i] }]);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    await sameEverywhere(c, "SELECT id, a, b FROM t ORDER BY id");
  });

  it("the random rowids SQLite picks once rowid 2^63-1 is used", async () => {
    const c = await cluster("max-rowid", "CREATE TABLE t (v)");
    const top = await exec(c, [
      {
        sql: "INSERT INTO t (rowid, v) VALUES (?, 'top')",
        params: [{ int: "9223372036854775807" }],
      },
    ]);
    expect(top.status, JSON.stringify(top.body)).toBe(200);
    for (let i = 0; i < 5; i++) {
      expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [i] }])).status).toBe(
        200,
      );
    }
    const rows = await sameEverywhere(c, "SELECT rowid, v FROM t ORDER BY rowid");
    expect(rows).toHaveLength(6);
    expect(rows.at(-1)).toEqual([{ int: "9223372036854775807" }, "top"]);
  });
});

describe("snapshots keep exact values and every row, 4 replicas plus one added", () => {
  it("integers beyond 2^53, typeless integers, and a user column named rowid survive a rebuild", async () => {
    const c = await cluster("snap-exact", 'CREATE TABLE t (n, "rowid" TEXT)');
    const values = Array.from({ length: 600 }, (_, i) => ({
      sql: 'INSERT INTO t (n, "rowid") VALUES (?, ?)',
      params: [i % 3 === 0 ? { int: `${9007199254740993n + BigInt(i)}` } : i, `r${i}`],
    }));
    expect((await exec(c, values)).status).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO t (n) VALUES (random())" }])).status).toBe(200);
    const id = await addReplica(c);
    const rows = await sameEverywhere(
      c,
      'SELECT _rowid_, n, typeof(n), "rowid" FROM t ORDER BY _rowid_',
      [...NODES, id],
    );
    expect(rows).toHaveLength(601);
    expect(rows[0]).toEqual([1, { int: "9007199254740993" }, "integer", "r0"]);
    expect(rows[1]).toEqual([2, 1, "integer", "r1"]);
  });

  it("the retry of a committed write is answered from its saved result before anything else runs", async () => {
    const c = await cluster("retry-first", "CREATE TABLE t2 (a)");
    const key = { "idempotency-key": "retry-before-guard" };
    const body = { statements: [{ sql: "INSERT INTO t2 (a) VALUES (1)" }] };
    const first = await call("POST", `/v1/clusters/${c}/exec`, { body, headers: key });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    // The statement no longer compiles (its table is gone), as after a deploy that refuses it.
    expect((await exec(c, [{ sql: "DROP TABLE t2" }])).status).toBe(200);
    const retry = await call("POST", `/v1/clusters/${c}/exec`, { body, headers: key });
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body).toMatchObject({ lsn: first.body.lsn, replayed: true });
  });
});

describe("a replica that computes other effects than the master is caught, 4 replicas", () => {
  it.each([
    [
      "no foreign key (checked by finding each row)",
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      "UPDATE t SET v = 'B' WHERE id = 2",
      [
        [1, "a"],
        [2, "B"],
      ],
    ],
    [
      "no foreign key, a DELETE",
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      "DELETE FROM t WHERE id = 2",
      [[1, "a"]],
    ],
    [
      "a foreign key (checked by capture)",
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v, up REFERENCES t (id))",
      "UPDATE t SET v = 'B' WHERE id = 2",
      [
        [1, "a"],
        [2, "B"],
      ],
    ],
    [
      "a foreign key, a DELETE",
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v, up REFERENCES t (id))",
      "DELETE FROM t WHERE id = 2",
      [[1, "a"]],
    ],
  ])(
    "a replica whose rows were changed outside the log diverges, serves nothing, and is rebuilt: %s",
    async (_, ddl, write, rows) => {
      const c = await cluster("diverge", ddl);
      expect(
        (await exec(c, [{ sql: "INSERT INTO t (id, v) VALUES (1, 'a'), (2, 'b')" }])).status,
      ).toBe(200);
      await converged(c);
      const tuned = await patchTunables(c, {
        debug_fault_injection: true,
        coherency_rejoin_penalty_ms: 0,
      });
      expect(tuned.status).toBe(200);
      // The fault route edits replica-1's rows behind the log's back.
      const tamper = await call("POST", `/admin/clusters/${c}/replicas/replica-1/tamper`, {
        body: { sql: "DELETE FROM t WHERE id = 2" },
      });
      expect(tamper.status, JSON.stringify(tamper.body)).toBe(200);
      // The next write changes row 2: replica-1 has no row 2.
      expect((await exec(c, [{ sql: write }])).status).toBe(200);
      await converged(c, 30_000);
      const s = await call<{ replicas: { id: string; snapshot: { id: string | null } }[] }>(
        "GET",
        `/admin/clusters/${c}/status`,
      );
      expect(s.body.replicas.find((r) => r.id === "replica-1")?.snapshot.id).not.toBeNull();
      expect(await sameEverywhere(c, "SELECT id, v FROM t ORDER BY id")).toEqual(rows);
      expect(await rowsOn(c, "replica-1", "SELECT count(*) FROM t")).toEqual([[rows.length]]);
    },
  );
});
