/**
 * Every error code of shared/API.md, triggered through the front door with real
 * HTTP requests: the status, the `{"error": {"code", "message"}}` body, JSON and
 * never a stack trace, and for bad input, that nothing was written.
 */
import { describe, expect, it } from "vitest";
import {
  type ApiResult,
  DATA,
  call,
  exec,
  freshCluster,
  patchTunables,
  query,
  status,
  verify,
  waitUntil,
} from "./helpers";

const REPLICAS = ["replica-1", "replica-2", "replica-3", "replica-4"];

/** Just over the 1 MiB body limit once wrapped in JSON. */
const HUGE = "x".repeat(1_100_000);

type Result = ApiResult<Record<string, unknown>>;

interface ErrorShape {
  code: string;
  message: string;
}

/** Checks the error body shape, the status and the code; returns the error object. */
function expectError(res: Result, httpStatus: number, code: string): ErrorShape {
  const context = JSON.stringify(res.body).slice(0, 500);
  expect(res.status, context).toBe(httpStatus);
  // `call` already refuses a body that is not JSON; the header must say so too.
  expect(res.headers.get("content-type") ?? "", context).toMatch(/^application\/json/);
  const error = res.body.error as Record<string, unknown> | undefined;
  expect(error, context).toBeTypeOf("object");
  expect(error?.code, context).toBe(code);
  const message = error?.message;
  expect(message, context).toBeTypeOf("string");
  expect((message as string).length, context).toBeGreaterThan(0);
  // Never a stack trace or an HTML page.
  expect(message as string, context).not.toMatch(/\n\s+at\s|<html|<!doctype/i);
  return { code, message: message as string };
}

async function createTable(
  cluster: string,
  ddl = "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)",
): Promise<void> {
  const res = await exec(cluster, [{ sql: ddl }]);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function masterLsn(cluster: string): Promise<number> {
  const s = await status(cluster);
  expect(s.status, JSON.stringify(s.body)).toBe(200);
  return s.body.master.lsn;
}

/** The master LSN did not move and every replica still agrees with the master. */
async function expectNothingWritten(cluster: string, lsnBefore: number): Promise<void> {
  expect(await masterLsn(cluster)).toBe(lsnBefore);
  const v = await verify(cluster);
  expect(v.status, JSON.stringify(v.body)).toBe(200);
  expect(v.body.mismatches).toEqual([]);
  expect(v.body.agree).toBe(true);
  expect(v.body.lsn).toBe(lsnBefore);
}

async function countRows(cluster: string, where = "1 = 1"): Promise<unknown> {
  const r = await query(cluster, `SELECT COUNT(*) AS n FROM t WHERE ${where}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.rows[0]?.n;
}

const execPath = (c: string) => `/v1/clusters/${c}/exec`;
const rowsPath = (c: string, table: string) => `/v1/clusters/${c}/tables/${table}/rows`;
const queryPath = (c: string) => `/v1/clusters/${c}/query`;

const insertOne = { statements: [{ sql: "INSERT INTO t (v) VALUES (?)", params: ["a"] }] };

interface BadInputCase {
  name: string;
  send: (cluster: string) => Promise<Result>;
}

/** Runs one bad request against a fresh cluster with a table and checks nothing changed. */
async function expectRefused(
  prefix: string,
  send: (cluster: string) => Promise<Result>,
  httpStatus: number,
  code: string,
): Promise<ErrorShape> {
  const c = freshCluster(prefix);
  await createTable(c);
  const before = await masterLsn(c);
  const error = expectError(await send(c), httpStatus, code);
  await expectNothingWritten(c, before);
  expect(await countRows(c)).toBe(0);
  return error;
}

describe("400 BAD_REQUEST", () => {
  const cases: BadInputCase[] = [
    { name: "malformed JSON", send: (c) => call("POST", execPath(c), { raw: '{"statements": [' }) },
    { name: "an empty body", send: (c) => call("POST", execPath(c), { raw: "" }) },
    { name: "a blank body", send: (c) => call("POST", execPath(c), { raw: "  \n " }) },
    { name: "a JSON array body", send: (c) => call("POST", execPath(c), { body: [insertOne] }) },
    {
      name: "statements that are not an array",
      send: (c) => call("POST", execPath(c), { body: { statements: "INSERT INTO t VALUES (1)" } }),
    },
    {
      name: "an empty statements array",
      send: (c) => call("POST", execPath(c), { body: { statements: [] } }),
    },
    {
      name: "sql that is a number",
      send: (c) => call("POST", execPath(c), { body: { statements: [{ sql: 42 }] } }),
    },
    {
      name: "params containing an object",
      send: (c) =>
        call("POST", execPath(c), {
          body: {
            statements: [{ sql: "INSERT INTO t (v) VALUES (?)", params: [{ nested: 1 }] }],
          },
        }),
    },
    {
      name: "params that are not an array",
      send: (c) =>
        call("POST", execPath(c), {
          body: { statements: [{ sql: "INSERT INTO t (v) VALUES (?)", params: "a" }] },
        }),
    },
    {
      name: "a missing statements field",
      send: (c) => call("POST", execPath(c), { body: {} }),
    },
    {
      name: "a statement without sql",
      send: (c) => call("POST", execPath(c), { body: { statements: [{ params: [1] }] } }),
    },
    {
      name: "an extra unknown field in exec",
      send: (c) => call("POST", execPath(c), { body: { ...insertOne, dryRun: true } }),
    },
    {
      name: "an invalid cluster name with upper case and punctuation",
      send: () => call("POST", execPath("Bad_Name!"), { body: insertOne }),
    },
    {
      name: "a cluster name of 64 characters",
      send: () => call("POST", execPath("a".repeat(64)), { body: insertOne }),
    },
    {
      name: "an empty Idempotency-Key",
      send: (c) =>
        call("POST", execPath(c), { body: insertOne, headers: { "idempotency-key": "" } }),
    },
    {
      name: "an Idempotency-Key of 200 characters",
      send: (c) =>
        call("POST", execPath(c), {
          body: insertOne,
          headers: { "idempotency-key": "k".repeat(200) },
        }),
    },
    {
      name: "an Idempotency-Key with a space",
      send: (c) =>
        call("POST", execPath(c), { body: insertOne, headers: { "idempotency-key": "a b" } }),
    },
    {
      name: "a rows request on the table name t;DROP",
      send: (c) => call("POST", rowsPath(c, "t;DROP"), { body: { rows: [{ v: "a" }] } }),
    },
    {
      name: "a rows request with the column name `a b`",
      send: (c) => call("POST", rowsPath(c, "t"), { body: { rows: [{ "a b": "a" }] } }),
    },
    {
      name: 'a rows request with the column name `x"y`',
      send: (c) => call("POST", rowsPath(c, "t"), { body: { rows: [{ 'x"y': "a" }] } }),
    },
    {
      name: "a rows request whose second row has a bad column name",
      send: (c) =>
        call("POST", rowsPath(c, "t"), { body: { rows: [{ v: "ok" }, { "v; --": "a" }] } }),
    },
    {
      name: "a rows request with an empty row",
      send: (c) => call("POST", rowsPath(c, "t"), { body: { rows: [{}] } }),
    },
    {
      name: "a rows request with an extra unknown field",
      send: (c) => call("POST", rowsPath(c, "t"), { body: { rows: [{ v: "a" }], upsert: true } }),
    },
    {
      name: "a query with consistency bookmark but no bookmark",
      send: (c) =>
        call("POST", queryPath(c), { body: { sql: "SELECT 1", consistency: "bookmark" } }),
    },
    {
      name: "a query with a bookmark that does not decode",
      send: (c) =>
        call("POST", queryPath(c), {
          body: { sql: "SELECT 1", consistency: "bookmark", bookmark: "not-a-bookmark" },
        }),
    },
    {
      name: "a query with an unknown consistency",
      send: (c) =>
        call("POST", queryPath(c), { body: { sql: "SELECT 1", consistency: "eventual" } }),
    },
    {
      name: "a query pinned to a replica id of the wrong format",
      send: (c) => call("POST", queryPath(c), { body: { sql: "SELECT 1", replica: "r1" } }),
    },
    {
      name: "a query with an extra unknown field",
      send: (c) => call("POST", queryPath(c), { body: { sql: "SELECT 1", limit: 5 } }),
    },
    {
      name: "a query with malformed JSON",
      send: (c) => call("POST", queryPath(c), { raw: "{sql: SELECT 1}" }),
    },
  ];

  it.each(cases)("answers $name with 400 BAD_REQUEST and writes nothing", async ({ send }) => {
    await expectRefused("badreq", send, 400, "BAD_REQUEST");
  });

  it("answers an admin route with an invalid cluster name with 400 BAD_REQUEST", async () => {
    expectError(await call("GET", "/admin/clusters/Bad_Name!/status"), 400, "BAD_REQUEST");
    expectError(
      await call("GET", `/admin/clusters/${"b".repeat(70)}/tunables`),
      400,
      "BAD_REQUEST",
    );
  });
});

describe("400 INVALID_SQL", () => {
  const cases: BadInputCase[] = [
    { name: "a syntax error", send: (c) => exec(c, [{ sql: "INSRT INTO t (v) VALUES ('a')" }]) },
    {
      name: "an incomplete statement",
      send: (c) => exec(c, [{ sql: "INSERT INTO t (v) VALUES (" }]),
    },
    {
      name: "an unknown table",
      send: (c) => exec(c, [{ sql: "INSERT INTO nope (v) VALUES (1)" }]),
    },
    {
      name: "an unknown column",
      send: (c) => exec(c, [{ sql: "INSERT INTO t (nope) VALUES (1)" }]),
    },
    {
      name: "two statements in one sql string",
      send: (c) =>
        exec(c, [{ sql: "INSERT INTO t (v) VALUES ('a'); INSERT INTO t (v) VALUES ('b')" }]),
    },
    { name: "a PRAGMA", send: (c) => exec(c, [{ sql: "PRAGMA user_version = 5" }]) },
    { name: "a BEGIN", send: (c) => exec(c, [{ sql: "BEGIN" }]) },
    {
      name: "the wrong number of parameters",
      send: (c) => exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: ["a", "b"] }]),
    },
    { name: "a DELETE sent to query", send: (c) => query(c, "DELETE FROM t") },
    {
      name: "an INSERT hidden in a WITH sent to query",
      send: (c) => query(c, "WITH x AS (SELECT 1) INSERT INTO t (v) SELECT 'a' FROM x"),
    },
    { name: "a syntax error in a query", send: (c) => query(c, "SELEC 1") },
    { name: "a query on an unknown table", send: (c) => query(c, "SELECT * FROM nope") },
  ];

  it.each(cases)("answers $name with 400 INVALID_SQL and writes nothing", async ({ send }) => {
    await expectRefused("badsql", send, 400, "INVALID_SQL");
  });

  it("answers a UNIQUE violation with 400 INVALID_SQL and keeps the first row only", async () => {
    const c = freshCluster("unique");
    await createTable(c);
    expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('dup')" }])).status).toBe(200);
    const before = await masterLsn(c);
    expectError(await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('dup')" }]), 400, "INVALID_SQL");
    await expectNothingWritten(c, before);
    expect(await countRows(c)).toBe(1);
  });

  it("rolls back the first statement of an exec whose second statement fails", async () => {
    const c = freshCluster("atomic");
    await createTable(c);
    expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('taken')" }])).status).toBe(200);
    const before = await masterLsn(c);
    // The second statement fails inside SQLite (UNIQUE), after the first one ran.
    expectError(
      await exec(c, [
        { sql: "INSERT INTO t (v) VALUES (?)", params: ["first"] },
        { sql: "INSERT INTO t (v) VALUES (?)", params: ["taken"] },
      ]),
      400,
      "INVALID_SQL",
    );
    // The second statement names a column that does not exist.
    expectError(
      await exec(c, [
        { sql: "INSERT INTO t (v) VALUES (?)", params: ["first"] },
        { sql: "UPDATE t SET nope = 1" },
      ]),
      400,
      "INVALID_SQL",
    );
    await expectNothingWritten(c, before);
    expect(await countRows(c, "v = 'first'")).toBe(0);
    for (const replica of REPLICAS) {
      const r = await query(c, "SELECT v FROM t ORDER BY id", { replica });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.rows).toEqual([{ v: "taken" }]);
    }
  });

  it("rolls back a rows request whose second row violates a constraint", async () => {
    const c = freshCluster("atomicrows");
    await createTable(c);
    expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('taken')" }])).status).toBe(200);
    const before = await masterLsn(c);
    const res = await call("POST", rowsPath(c, "t"), {
      body: { rows: [{ v: "first" }, { v: "taken" }] },
    });
    expectError(res, 400, "INVALID_SQL");
    await expectNothingWritten(c, before);
    expect(await countRows(c)).toBe(1);
  });
});

describe("400 NON_DETERMINISTIC", () => {
  // Writes ship the rows they changed, so non-deterministic SQL is fine in them;
  // a write to a virtual table (fts5) is replayed as a statement and must not be.
  const cases: BadInputCase[] = [
    {
      name: "an fts5 INSERT of datetime('now')",
      send: (c) =>
        exec(c, [
          { sql: "CREATE VIRTUAL TABLE IF NOT EXISTS f USING fts5(body)" },
          { sql: "INSERT INTO f (body) VALUES (datetime('now'))" },
        ]),
    },
    {
      name: "a good statement followed by a non-deterministic fts5 write",
      send: (c) =>
        exec(c, [
          { sql: "INSERT INTO t (v) VALUES ('a')" },
          { sql: "CREATE VIRTUAL TABLE IF NOT EXISTS f USING fts5(body)" },
          { sql: "INSERT INTO f (body) VALUES (random())" },
        ]),
    },
  ];

  it.each(cases)(
    "answers $name with 400 NON_DETERMINISTIC and writes nothing",
    async ({ send }) => {
      await expectRefused("nondet", send, 400, "NON_DETERMINISTIC");
    },
  );

  it("ships the values random() and datetime('now') took on the master, so every replica holds them", async () => {
    const c = freshCluster("rewrite");
    await createTable(c, "CREATE TABLE r (id INTEGER PRIMARY KEY, n INTEGER, ts TEXT)");
    for (let i = 0; i < 3; i++) {
      const w = await exec(c, [
        { sql: "INSERT INTO r (n, ts) VALUES (random(), datetime('now'))" },
      ]);
      expect(w.status, JSON.stringify(w.body)).toBe(200);
    }
    // n as text: a 64-bit integer loses its low bits as a JSON number.
    const sql = "SELECT id, CAST(n AS TEXT) AS n, ts FROM r ORDER BY id";
    const reads: Record<string, unknown>[][] = [];
    for (const replica of REPLICAS) {
      const r = await query(c, sql, { replica, consistency: "strong" });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.servedBy).toBe(replica);
      reads.push(r.body.rows);
    }
    const first = reads[0] ?? [];
    expect(first).toHaveLength(3);
    for (const row of first) {
      expect(row.n).toMatch(/^-?\d+$/);
      expect(row.ts).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    }
    // Three draws of random() are (with overwhelming probability) distinct.
    expect(new Set(first.map((row) => row.n)).size).toBe(3);
    for (const rows of reads) expect(rows).toEqual(first);

    // The master's copy, read there (with durable_lsns, on by default, a master
    // with every replica stopped answers no strong read: it has no majority).
    const fromMaster = await query(c, sql, { consistency: "strong", replica: "master" });
    expect(fromMaster.status, JSON.stringify(fromMaster.body)).toBe(200);
    expect(fromMaster.body.servedBy).toBe("master");
    expect(fromMaster.body.rows).toEqual(first);
    const v = await verify(c);
    expect(v.body.mismatches).toEqual([]);
    expect(v.body.agree).toBe(true);
  }, 30_000);
});

describe("400 RESERVED_NAME", () => {
  const cases: BadInputCase[] = [
    {
      name: "an exec that deletes from _repl_changes",
      send: (c) => exec(c, [{ sql: "DELETE FROM _repl_changes" }]),
    },
    {
      name: "an exec that reads _repl_changes inside an INSERT",
      send: (c) => exec(c, [{ sql: "INSERT INTO t (v) SELECT img FROM _repl_changes" }]),
    },
    {
      name: "an exec that creates a table named _repl_x",
      send: (c) => exec(c, [{ sql: "CREATE TABLE _repl_x (a INTEGER)" }]),
    },
    {
      name: "an exec that sets the trigger guard's flag",
      send: (c) => exec(c, [{ sql: "INSERT INTO _repl_applying (x) VALUES (1)" }]),
    },
    { name: "a query on _repl_changes", send: (c) => query(c, "SELECT * FROM _repl_changes") },
    {
      name: "a query on a quoted '_repl_applying'",
      send: (c) => query(c, "SELECT * FROM '_repl_applying'"),
    },
    {
      name: "a rows request on the table _repl_changes",
      send: (c) => call("POST", rowsPath(c, "_repl_changes"), { body: { rows: [{ tbl: "t" }] } }),
    },
  ];

  it.each(cases)("answers $name with 400 RESERVED_NAME and writes nothing", async ({ send }) => {
    await expectRefused("reserved", send, 400, "RESERVED_NAME");
  });
});

describe("400 UNKNOWN_TUNABLE and INVALID_TUNABLE_VALUE", () => {
  async function getTunables(c: string): Promise<Record<string, unknown>> {
    const res = await call("GET", `/admin/clusters/${c}/tunables`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  }

  const cases: { name: string; patch: Record<string, unknown>; code: string }[] = [
    { name: "an unknown name", patch: { no_such_knob: 1 }, code: "UNKNOWN_TUNABLE" },
    {
      name: "a good entry and an unknown name",
      patch: { rep_timeout_ms: 1234, no_such_knob: 1 },
      code: "UNKNOWN_TUNABLE",
    },
    {
      name: "a value below the minimum",
      patch: { rep_timeout_ms: 1 },
      code: "INVALID_TUNABLE_VALUE",
    },
    {
      name: "a value above the maximum",
      patch: { writer_concurrency: 100_000 },
      code: "INVALID_TUNABLE_VALUE",
    },
    {
      name: "a fraction for an int",
      patch: { writer_concurrency: 1.5 },
      code: "INVALID_TUNABLE_VALUE",
    },
    { name: "a string for a bool", patch: { durable_lsns: "yes" }, code: "INVALID_TUNABLE_VALUE" },
    { name: "a string for an int", patch: { heartbeat_ms: "100" }, code: "INVALID_TUNABLE_VALUE" },
    {
      name: "a good entry and a bad value",
      patch: { rep_timeout_ms: 1234, commit_timeout_ms: 5 },
      code: "INVALID_TUNABLE_VALUE",
    },
    {
      name: "a bad value after a good entry of another type",
      patch: { durable_lsns: true, slow_replica_factor: -1 },
      code: "INVALID_TUNABLE_VALUE",
    },
  ];

  it.each(cases)(
    "answers a PATCH with $name with 400 $code and changes nothing",
    async ({ patch, code }) => {
      const c = freshCluster("tunables");
      const before = await getTunables(c);
      expectError(await patchTunables(c, patch), 400, code);
      expect(await getTunables(c)).toEqual(before);
    },
  );

  it("answers a PATCH that is not an object or is empty with 400 BAD_REQUEST", async () => {
    const c = freshCluster("tunables-shape");
    const before = await getTunables(c);
    const path = `/admin/clusters/${c}/tunables`;
    expectError(await call("PATCH", path, { body: [1, 2] }), 400, "BAD_REQUEST");
    expectError(await call("PATCH", path, { body: {} }), 400, "BAD_REQUEST");
    expectError(await call("PATCH", path, { raw: "{rep_timeout_ms: 5}" }), 400, "BAD_REQUEST");
    expect(await getTunables(c)).toEqual(before);
  });
});

describe("401 UNAUTHORIZED", () => {
  it("answers a data request without a token or with a wrong token with 401 and writes nothing", async () => {
    const c = freshCluster("auth");
    await createTable(c);
    const before = await masterLsn(c);
    expectError(
      await call("POST", execPath(c), { body: insertOne, token: null }),
      401,
      "UNAUTHORIZED",
    );
    expectError(
      await call("POST", execPath(c), { body: insertOne, token: "wrong-token" }),
      401,
      "UNAUTHORIZED",
    );
    expectError(
      await call("POST", execPath(c), {
        body: insertOne,
        token: null,
        headers: { authorization: `Basic ${btoa(`user:${DATA}`)}` },
      }),
      401,
      "UNAUTHORIZED",
    );
    expectError(
      await call("POST", rowsPath(c, "t"), { body: { rows: [{ v: "a" }] }, token: null }),
      401,
      "UNAUTHORIZED",
    );
    expectError(
      await call("POST", queryPath(c), { body: { sql: "SELECT 1" }, token: "wrong-token" }),
      401,
      "UNAUTHORIZED",
    );
    await expectNothingWritten(c, before);
    expect(await countRows(c)).toBe(0);
  });

  it("answers admin routes with the data token, a wrong token or no token with 401", async () => {
    const c = freshCluster("authadmin");
    const tunables = `/admin/clusters/${c}/tunables`;
    expectError(
      await call("GET", `/admin/clusters/${c}/status`, { token: DATA }),
      401,
      "UNAUTHORIZED",
    );
    expectError(await call("GET", tunables, { token: DATA }), 401, "UNAUTHORIZED");
    expectError(
      await call("PATCH", tunables, { token: DATA, body: { debug_fault_injection: true } }),
      401,
      "UNAUTHORIZED",
    );
    expectError(
      await call("POST", `/admin/clusters/${c}/verify`, { token: DATA }),
      401,
      "UNAUTHORIZED",
    );
    expectError(
      await call("GET", `/admin/clusters/${c}/status`, { token: null }),
      401,
      "UNAUTHORIZED",
    );
    expectError(
      await call("GET", `/admin/clusters/${c}/status`, { token: "wrong-token" }),
      401,
      "UNAUTHORIZED",
    );
    expectError(await call("GET", `/metrics?cluster=${c}`, { token: DATA }), 401, "UNAUTHORIZED");
    expectError(await call("GET", `/metrics?cluster=${c}`, { token: null }), 401, "UNAUTHORIZED");
    // The refused PATCH changed nothing.
    const after = await call("GET", tunables);
    expect(after.status).toBe(200);
    expect(after.body.debug_fault_injection).toMatchObject({ value: false });
  });
});

describe("403 FORBIDDEN", () => {
  it("refuses the fault routes while debug_fault_injection is off", async () => {
    const c = freshCluster("forbidden");
    await createTable(c);
    expectError(await call("POST", `/admin/clusters/${c}/master/crash`), 403, "FORBIDDEN");
    expectError(
      await call("POST", `/admin/clusters/${c}/replicas/replica-1/stop`),
      403,
      "FORBIDDEN",
    );
    expectError(
      await call("POST", `/admin/clusters/${c}/replicas/replica-1/start`),
      403,
      "FORBIDDEN",
    );
    // Nothing was stopped or crashed: a pinned strong read and a write still work.
    const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('still-up')" }]);
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    const r = await query(c, "SELECT COUNT(*) AS n FROM t", { replica: "replica-1" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.rows).toEqual([{ n: 1 }]);
  });
});

describe("404 NOT_FOUND", () => {
  it("answers an unknown route with 404 NOT_FOUND", async () => {
    const c = freshCluster("route");
    expectError(await call("GET", "/no/such/route"), 404, "NOT_FOUND");
    expectError(await call("POST", `/v1/clusters/${c}/nope`, { body: {} }), 404, "NOT_FOUND");
    expectError(await call("GET", `/v1/clusters/${c}/exec`), 404, "NOT_FOUND");
    expectError(await call("GET", `/admin/clusters/${c}/nope`), 404, "NOT_FOUND");
    expectError(
      await call("POST", `/admin/clusters/${c}/replicas/replica-1/pause`),
      404,
      "NOT_FOUND",
    );
  });

  it("answers a rows request on a table that does not exist with 404 NOT_FOUND", async () => {
    await expectRefused(
      "notable",
      (c) => call("POST", rowsPath(c, "no_such_table"), { body: { rows: [{ v: "a" }] } }),
      404,
      "NOT_FOUND",
    );
  });

  it.each(["replica-9", "replica-0", "replica-5"])(
    "answers a read pinned to %s of a 4-replica cluster with 404 NOT_FOUND",
    async (replica) => {
      await expectRefused(
        "noreplica",
        (c) => query(c, "SELECT 1 AS one", { replica }),
        404,
        "NOT_FOUND",
      );
    },
  );

  it("answers a fault route on replica-9 with 404 NOT_FOUND", async () => {
    const c = freshCluster("nofault");
    expect((await patchTunables(c, { debug_fault_injection: true })).status).toBe(200);
    expectError(
      await call("POST", `/admin/clusters/${c}/replicas/replica-9/stop`),
      404,
      "NOT_FOUND",
    );
    expectError(await call("POST", `/admin/clusters/${c}/replicas/nobody/stop`), 404, "NOT_FOUND");
  });
});

describe("409 IDEMPOTENCY_KEY_REUSED", () => {
  it("refuses a key reused with a different body and does not execute it", async () => {
    const c = freshCluster("reuse");
    await createTable(c);
    const first = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('one')" }], "reused-key");
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const before = await masterLsn(c);
    expectError(
      await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('two')" }], "reused-key"),
      409,
      "IDEMPOTENCY_KEY_REUSED",
    );
    // Same key on the rows route: a different request, too.
    expectError(
      await call("POST", rowsPath(c, "t"), {
        body: { rows: [{ v: "one" }] },
        headers: { "idempotency-key": "reused-key" },
      }),
      409,
      "IDEMPOTENCY_KEY_REUSED",
    );
    await expectNothingWritten(c, before);
    expect(await countRows(c)).toBe(1);
    expect(await countRows(c, "v = 'two'")).toBe(0);
  });

  it("does not burn the key of a refused request: the key then works with another body", async () => {
    const c = freshCluster("unburnt");
    await createTable(c);
    const before = await masterLsn(c);
    const bad = [{ sql: "INSERT INTO nope (v) VALUES ('x')" }];
    expectError(await exec(c, bad, "fresh-key"), 400, "INVALID_SQL");
    // The same refused request again is refused again, not replayed.
    expectError(await exec(c, bad, "fresh-key"), 400, "INVALID_SQL");
    await expectNothingWritten(c, before);
    const good = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('good')" }], "fresh-key");
    expect(good.status, JSON.stringify(good.body)).toBe(200);
    expect(good.body.replayed).toBeUndefined();
    expect(await countRows(c)).toBe(1);
  });
});

describe("413 PAYLOAD_TOO_LARGE", () => {
  const cases: BadInputCase[] = [
    {
      name: "an exec body",
      send: (c) =>
        call("POST", execPath(c), {
          raw: JSON.stringify({
            statements: [{ sql: "INSERT INTO t (v) VALUES (?)", params: [HUGE] }],
          }),
        }),
    },
    {
      name: "a rows body",
      send: (c) => call("POST", rowsPath(c, "t"), { raw: JSON.stringify({ rows: [{ v: HUGE }] }) }),
    },
    {
      name: "a query body",
      send: (c) =>
        call("POST", queryPath(c), {
          raw: JSON.stringify({ sql: "SELECT ? AS big", params: [HUGE] }),
        }),
    },
    {
      name: "a query result of more than 10,000 rows",
      send: (c) =>
        query(
          c,
          "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s LIMIT 10001) SELECT x FROM s",
        ),
    },
    {
      name: "an exec body that is not even JSON",
      send: (c) => call("POST", execPath(c), { raw: HUGE }),
    },
  ];

  it.each(cases)(
    "answers $name with 413 PAYLOAD_TOO_LARGE and writes nothing",
    async ({ send }) => {
      await expectRefused("toolarge", send, 413, "PAYLOAD_TOO_LARGE");
    },
  );
});

describe("503 NOT_DURABLE", () => {
  it("answers NOT_DURABLE with Retry-After when a majority is down, then replays once they return", async () => {
    const c = freshCluster("durable");
    await createTable(c);
    const tuned = await patchTunables(c, {
      durable_lsns: true,
      rep_timeout_ms: 300,
      coherency_lease_ms: 100,
      heartbeat_ms: 50,
      debug_fault_injection: true,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    const down = ["replica-1", "replica-2", "replica-3"];
    for (const replica of down) {
      const stop = await call("POST", `/admin/clusters/${c}/replicas/${replica}/stop`);
      expect(stop.status, JSON.stringify(stop.body)).toBe(200);
    }
    const statements = [{ sql: "INSERT INTO t (v) VALUES (?)", params: ["durable-row"] }];
    const first = await exec(c, statements, "durable-key");
    expectError(first, 503, "NOT_DURABLE");
    const retryAfter = first.headers.get("retry-after");
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);

    for (const replica of down) {
      const start = await call("POST", `/admin/clusters/${c}/replicas/${replica}/start`);
      expect(start.status, JSON.stringify(start.body)).toBe(200);
    }
    let replayed: Result | null = null;
    await waitUntil(
      "the retried write to be answered",
      async () => {
        const res = await exec(c, statements, "durable-key");
        if (res.status === 200) {
          replayed = res;
          return true;
        }
        expectError(res, 503, "NOT_DURABLE");
        return false;
      },
      15_000,
      200,
    );
    const done = replayed as Result | null;
    expect(done?.body.replayed).toBe(true);
    expect(done?.body.lsn).toBe((first.body.error as Record<string, unknown>).lsn);
    expect(await countRows(c, "v = 'durable-row'")).toBe(1);
    const v = await verify(c);
    expect(v.body.mismatches).toEqual([]);
    expect(v.body.agree).toBe(true);
  }, 40_000);
});

describe("504 COMMIT_TIMEOUT", () => {
  it("answers COMMIT_TIMEOUT when acks are slower than commit_timeout_ms, then replays once they are not", async () => {
    const c = freshCluster("timeout");
    await createTable(c);
    const tuned = await patchTunables(c, {
      commit_timeout_ms: 300,
      // The deadline and the give-up instant coincide: the give-up is decided first.
      rep_timeout_ms: 300,
      debug_ack_delay_ms: 2000,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    const statements = [{ sql: "INSERT INTO t (v) VALUES (?)", params: ["slow-row"] }];
    const started = Date.now();
    const first = await exec(c, statements, "timeout-key");
    expectError(first, 504, "COMMIT_TIMEOUT");
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect((first.body.error as Record<string, unknown>).lsn).toBe(2);

    const reset = await patchTunables(c, { debug_ack_delay_ms: 0 });
    expect(reset.status, JSON.stringify(reset.body)).toBe(200);
    let replayed: Result | null = null;
    await waitUntil(
      "the retried write to be answered",
      async () => {
        const res = await exec(c, statements, "timeout-key");
        if (res.status === 200) {
          replayed = res;
          return true;
        }
        expectError(res, 504, "COMMIT_TIMEOUT");
        return false;
      },
      15_000,
      200,
    );
    const done = replayed as Result | null;
    expect(done?.body.replayed).toBe(true);
    expect(done?.body.lsn).toBe(2);
    expect(await countRows(c, "v = 'slow-row'")).toBe(1);
    const v = await verify(c);
    expect(v.body.agree).toBe(true);
  }, 40_000);
});

describe("503 UNAVAILABLE", () => {
  it("answers a read pinned to a stopped replica with 503 UNAVAILABLE and Retry-After", async () => {
    const c = freshCluster("unavailable");
    await createTable(c);
    expect((await patchTunables(c, { debug_fault_injection: true })).status).toBe(200);
    const stop = await call("POST", `/admin/clusters/${c}/replicas/replica-2/stop`);
    expect(stop.status, JSON.stringify(stop.body)).toBe(200);
    for (const consistency of ["strong", "any"]) {
      const res = await query(c, "SELECT COUNT(*) AS n FROM t", {
        replica: "replica-2",
        consistency,
      });
      expectError(res, 503, "UNAVAILABLE");
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    }
    // An unpinned read is still served (by another replica or the master).
    const r = await query(c, "SELECT COUNT(*) AS n FROM t");
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.servedBy).not.toBe("replica-2");
    const start = await call("POST", `/admin/clusters/${c}/replicas/replica-2/start`);
    expect(start.status, JSON.stringify(start.body)).toBe(200);
  });
});

describe("statements that return rows inside exec", () => {
  /**
   * Runs `sql` as an exec on a cluster holding rows, and checks the contract: either a 400
   * INVALID_SQL with nothing written, or a 200 whose write every replica applies.
   */
  async function execEverywhereOrRefused(sql: string): Promise<void> {
    const c = freshCluster("returns-rows");
    await createTable(c);
    const tuned = await patchTunables(c, {
      rep_timeout_ms: 2_000,
      coherency_lease_ms: 100,
      heartbeat_ms: 50,
      debug_fault_injection: true,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    const seed = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('x'), ('y')" }]);
    expect(seed.status, JSON.stringify(seed.body)).toBe(200);
    const before = await masterLsn(c);
    try {
      const res = await exec(c, [{ sql }]);
      if (res.status !== 200) {
        expectError(res, 400, "INVALID_SQL");
        await expectNothingWritten(c, before);
        return;
      }
      await waitUntil(
        "every replica to apply the exec",
        async () => {
          const s = await status(c);
          return s.body.replicas.every(
            (r) => r.state === "coherent" && r.ackedLsn === s.body.master.lsn,
          );
        },
        // A busy machine may take seconds; a replica that cannot apply the write never
        // gets there (its exec is answered after rep_timeout_ms, 2 s, with it marked).
        10_000,
      );
      const v = await verify(c);
      expect(v.body.mismatches).toEqual([]);
      expect(v.body.agree).toBe(true);
    } finally {
      // Stop this cluster's replicas so a stuck relay does not retry (and log) for the rest
      // of the run.
      // A replica wedged by a failed apply may refuse the first stop with a 503.
      for (const replica of REPLICAS) {
        for (let attempt = 0; attempt < 5; attempt++) {
          const stop = await call("POST", `/admin/clusters/${c}/replicas/${replica}/stop`);
          if (stop.status === 200) break;
        }
      }
    }
  }

  it.each(["SELECT v FROM t", "VALUES (1), (2)", "EXPLAIN SELECT 1"])(
    "replicates an exec containing the read %s to every replica",
    async (sql) => {
      await execEverywhereOrRefused(sql);
    },
    20_000,
  );

  // Replicas must read every statement's result through, or a RETURNING cursor left
  // open blocks their commit and replication stops at that LSN.
  it.each([
    "INSERT INTO t (v) VALUES ('r') RETURNING id",
    "UPDATE t SET v = 'u' RETURNING id",
    "DELETE FROM t RETURNING id",
  ])(
    "replicates an exec containing %s to every replica",
    async (sql) => {
      await execEverywhereOrRefused(sql);
    },
    20_000,
  );
});
