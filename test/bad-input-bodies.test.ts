/**
 * Bodies that are not the JSON a route expects: malformed, empty, of the wrong
 * shape, too deep, over 1 MiB; wrong types, missing and unknown fields; and
 * injection in the rows route's table and column names. See bad-input-helpers.ts.
 */
import { describe } from "vitest";
import { call } from "./helpers";
import {
  type Case,
  DEEP,
  HUGE,
  INTERNAL_TABLES,
  type Send,
  runCases,
  sweepCluster,
} from "./bad-input-helpers";

const BODY_ROUTES: { route: string; path: (c: string) => string; method: string; ok: unknown }[] = [
  {
    route: "POST /v1/clusters/:cluster/exec",
    method: "POST",
    path: (c) => `/v1/clusters/${c}/exec`,
    ok: { statements: [{ sql: "INSERT INTO t (v) VALUES (?)", params: ["x"] }] },
  },
  {
    route: "POST /v1/clusters/:cluster/tables/:table/rows",
    method: "POST",
    path: (c) => `/v1/clusters/${c}/tables/t/rows`,
    ok: { rows: [{ v: "x" }] },
  },
  {
    route: "POST /v1/clusters/:cluster/query",
    method: "POST",
    path: (c) => `/v1/clusters/${c}/query`,
    ok: { sql: "SELECT 1" },
  },
  {
    route: "PATCH /admin/clusters/:cluster/tunables",
    method: "PATCH",
    path: (c) => `/admin/clusters/${c}/tunables`,
    ok: { rep_timeout_ms: 4000 },
  },
  {
    route: "POST /admin/clusters/:cluster/replicas/:id/delay",
    method: "POST",
    path: (c) => `/admin/clusters/${c}/replicas/replica-1/delay`,
    ok: { ms: 10 },
  },
  {
    route: "POST /admin/clusters/:cluster/faults",
    method: "POST",
    path: (c) => `/admin/clusters/${c}/faults`,
    ok: { drop: 0.5 },
  },
  {
    route: "POST /admin/clusters/:cluster/replicas/:id/rewind",
    method: "POST",
    path: (c) => `/admin/clusters/${c}/replicas/replica-1/rewind`,
    ok: { lsn: 0 },
  },
];

describe("every route with a body refuses a body that is not the JSON it expects", () => {
  const cluster = sweepCluster("bodies");
  const kinds: { kind: string; raw: (ok: unknown) => string; status: number; code: string }[] = [
    { kind: "malformed JSON", raw: () => '{"a": ', status: 400, code: "BAD_REQUEST" },
    { kind: "an empty body", raw: () => "", status: 400, code: "BAD_REQUEST" },
    { kind: "a blank body", raw: () => " \r\n\t", status: 400, code: "BAD_REQUEST" },
    { kind: "JSON null", raw: () => "null", status: 400, code: "BAD_REQUEST" },
    { kind: "a JSON array", raw: (ok) => JSON.stringify([ok]), status: 400, code: "BAD_REQUEST" },
    { kind: "a JSON string", raw: () => '"SELECT 1"', status: 400, code: "BAD_REQUEST" },
    { kind: "a JSON number", raw: () => "42", status: 400, code: "BAD_REQUEST" },
    { kind: "an HTML form", raw: () => "<html>sql=1</html>", status: 400, code: "BAD_REQUEST" },
    { kind: "a form encoding", raw: () => "sql=SELECT+1", status: 400, code: "BAD_REQUEST" },
    {
      kind: "JSON with trailing garbage",
      raw: (ok) => `${JSON.stringify(ok)} x`,
      status: 400,
      code: "BAD_REQUEST",
    },
    { kind: "100,000 nested arrays", raw: () => DEEP, status: 400, code: "BAD_REQUEST" },
    {
      kind: "a body just over 1 MiB",
      raw: (ok) => JSON.stringify({ ...(ok as object), pad: HUGE }),
      status: 413,
      code: "PAYLOAD_TOO_LARGE",
    },
    { kind: "1 MiB of non-JSON", raw: () => HUGE, status: 413, code: "PAYLOAD_TOO_LARGE" },
    {
      kind: "a body over 1 MiB in multi-byte characters",
      raw: () => JSON.stringify({ sql: "é".repeat(600_000) }),
      status: 413,
      code: "PAYLOAD_TOO_LARGE",
    },
  ];
  const cases: Case[] = BODY_ROUTES.flatMap((r) =>
    kinds.map((k) => ({
      name: `${r.route} with ${k.kind}`,
      send: (c: string) => call(r.method, r.path(c), { raw: k.raw(r.ok) }),
      status: k.status,
      code: k.code,
    })),
  );
  runCases(cases, cluster);
});

describe("the data routes refuse wrong types, missing and unknown fields with 400", () => {
  const cluster = sweepCluster("fields");
  const execPath = (c: string) => `/v1/clusters/${c}/exec`;
  const rowsPath = (c: string, table = "t") => `/v1/clusters/${c}/tables/${table}/rows`;
  const queryPath = (c: string) => `/v1/clusters/${c}/query`;
  const insert = { sql: "INSERT INTO t (v) VALUES (?)", params: ["x"] };
  const bad = (name: string, send: Send): Case => ({
    name,
    send,
    status: 400,
    code: "BAD_REQUEST",
  });
  const execBody = (name: string, body: unknown) =>
    bad(`exec with ${name}`, (c) => call("POST", execPath(c), { body }));
  const rowsBody = (name: string, body: unknown) =>
    bad(`rows with ${name}`, (c) => call("POST", rowsPath(c), { body }));
  const queryBody = (name: string, body: unknown) =>
    bad(`query with ${name}`, (c) => call("POST", queryPath(c), { body }));

  runCases(
    [
      execBody("no statements field", {}),
      execBody("statements as an object", { statements: insert }),
      execBody("statements as a string", { statements: "INSERT INTO t (v) VALUES (1)" }),
      execBody("statements as null", { statements: null }),
      execBody("no statements", { statements: [] }),
      execBody("a statement that is a string", { statements: [insert.sql] }),
      execBody("a statement without sql", { statements: [{ params: [1] }] }),
      execBody("sql as null", { statements: [{ sql: null }] }),
      execBody("sql as a number", { statements: [{ sql: 1 }] }),
      execBody("sql as an array of strings", { statements: [{ sql: [insert.sql] }] }),
      execBody("empty sql", { statements: [{ sql: "" }] }),
      execBody("sql of 100,001 characters", {
        statements: [{ sql: `SELECT 1 ${" ".repeat(100_000)}` }],
      }),
      execBody("params as a string", { statements: [{ ...insert, params: "x" }] }),
      execBody("params as an object of names", { statements: [{ ...insert, params: { a: 1 } }] }),
      execBody("a param that is an object", { statements: [{ ...insert, params: [{ a: 1 }] }] }),
      execBody("a param that is an array", { statements: [{ ...insert, params: [[1]] }] }),
      execBody("101 params", {
        statements: [{ sql: "SELECT ?", params: Array.from({ length: 101 }, () => 1) }],
      }),
      execBody("1,001 statements", {
        statements: Array.from({ length: 1001 }, () => insert),
      }),
      execBody("an unknown field in the body", { statements: [insert], transaction: "deferred" }),
      execBody("a __proto__ field", JSON.parse(`{"statements":[],"__proto__":{"x":1}}`)),
      bad("exec with an Idempotency-Key of 129 characters", (c) =>
        call("POST", execPath(c), {
          body: { statements: [insert] },
          headers: { "idempotency-key": "k".repeat(129) },
        }),
      ),
      bad("exec with an Idempotency-Key outside printable ASCII", (c) =>
        call("POST", execPath(c), {
          body: { statements: [insert] },
          headers: { "idempotency-key": "clé" },
        }),
      ),
      rowsBody("no rows field", {}),
      rowsBody("rows as an object", { rows: { v: "x" } }),
      rowsBody("no rows", { rows: [] }),
      rowsBody("a row that is an array", { rows: [["x"]] }),
      rowsBody("a row that is null", { rows: [null] }),
      rowsBody("an empty row", { rows: [{}] }),
      rowsBody("a value that is an object", { rows: [{ v: { nested: true } }] }),
      rowsBody("a value that is an array", { rows: [{ v: [1, 2] }] }),
      rowsBody("1,001 rows", { rows: Array.from({ length: 1001 }, () => ({ v: "x" })) }),
      rowsBody("a row of 101 columns", {
        rows: [Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`c${i}`, i]))],
      }),
      rowsBody("an unknown field in the body", { rows: [{ v: "x" }], onConflict: "ignore" }),
      bad("rows with an Idempotency-Key with a space", (c) =>
        call("POST", rowsPath(c), {
          body: { rows: [{ v: "x" }] },
          headers: { "idempotency-key": "a b" },
        }),
      ),
      queryBody("no sql", {}),
      queryBody("sql as a number", { sql: 1 }),
      queryBody("empty sql", { sql: "" }),
      queryBody("sql of 100,001 characters", { sql: `SELECT 1 ${" ".repeat(100_000)}` }),
      queryBody("params as a string", { sql: "SELECT ?", params: "1" }),
      queryBody("named params as an object", { sql: "SELECT :a", params: { a: 1 } }),
      queryBody("101 params", { sql: "SELECT ?", params: Array.from({ length: 101 }, () => 1) }),
      queryBody("an unknown consistency", { sql: "SELECT 1", consistency: "linearizable" }),
      queryBody("consistency in upper case", { sql: "SELECT 1", consistency: "STRONG" }),
      queryBody("consistency as a number", { sql: "SELECT 1", consistency: 1 }),
      queryBody("a bookmark consistency without a bookmark", {
        sql: "SELECT 1",
        consistency: "bookmark",
      }),
      queryBody("a bookmark that does not decode", {
        sql: "SELECT 1",
        consistency: "bookmark",
        bookmark: "b1.-1",
      }),
      queryBody("a bookmark of 65 characters", {
        sql: "SELECT 1",
        consistency: "bookmark",
        bookmark: `b1.${"9".repeat(62)}`,
      }),
      queryBody("a replica id of the wrong form", { sql: "SELECT 1", replica: "1" }),
      queryBody("a replica id as a number", { sql: "SELECT 1", replica: 1 }),
      queryBody("an unknown field", { sql: "SELECT 1", timeoutMs: 10 }),
    ],
    cluster,
  );
});

// ---------------------------------------------------------------------------
// Names in the rows route

describe("the rows route refuses injection in table and column names", () => {
  const cluster = sweepCluster("rows-names");
  const rows = (table: string, row: Record<string, unknown>) => (c: string) =>
    call("POST", `/v1/clusters/${c}/tables/${encodeURIComponent(table)}/rows`, {
      body: { rows: [row] },
    });
  const tables = [
    "t;DROP TABLE t",
    't"; DROP TABLE t; --',
    "t' OR '1'='1",
    "t--",
    "t/**/",
    "t)",
    "1t",
    "t-x",
    "t x",
    "t.v",
    "main.t",
    "[t]",
    "`t`",
    "ｔ",
    "t\u0000",
    "a".repeat(129),
  ];
  const columns = [
    "v) VALUES (1); DROP TABLE t; --",
    'v"',
    "v'",
    "v--",
    "v;",
    "v)",
    "1v",
    "v x",
    "t.v",
    "[v]",
    "`v`",
    "",
    "ｖ",
    "a".repeat(129),
  ];
  runCases(
    [
      ...tables.map((table) => ({
        name: `a table named ${JSON.stringify(table.slice(0, 40))}`,
        send: rows(table, { v: "x" }),
        status: 400,
        code: "BAD_REQUEST",
      })),
      ...columns.map((column) => ({
        name: `a column named ${JSON.stringify(column.slice(0, 40))}`,
        send: rows("t", { [column]: "x" }),
        status: 400,
        code: "BAD_REQUEST",
      })),
      {
        name: "a bad column in the last of three rows",
        send: (c: string) =>
          call("POST", `/v1/clusters/${c}/tables/t/rows`, {
            body: { rows: [{ v: "ok" }, { v: "ok" }, { "v = v; --": "x" }] },
          }),
        status: 400,
        code: "BAD_REQUEST",
      },
      ...[...INTERNAL_TABLES, "_REPL_CHANGES", "_cf_KV", "sqlite_master", "sqlite_sequence"].map(
        (table) => ({
          name: `the internal table ${table}`,
          send: rows(table, { key: "x", value: "y" }),
          status: 400,
          code: "RESERVED_NAME",
        }),
      ),
      {
        name: "an internal column name",
        send: rows("t", { _repl_x: 1 }),
        status: 400,
        code: "RESERVED_NAME",
      },
      {
        name: "a table that does not exist",
        send: rows("no_such_table", { v: "x" }),
        status: 404,
        code: "NOT_FOUND",
      },
      {
        name: "a column that does not exist",
        send: rows("t", { nope: "x" }),
        status: 400,
        code: "INVALID_SQL",
      },
      {
        name: "a good row and a row with a column that does not exist",
        send: (c: string) =>
          call("POST", `/v1/clusters/${c}/tables/t/rows`, {
            body: { rows: [{ v: "ok" }, { nope: "x" }] },
          }),
        status: 400,
        code: "INVALID_SQL",
      },
    ],
    cluster,
  );
});
