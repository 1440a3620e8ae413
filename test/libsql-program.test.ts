/**
 * The libSQL endpoint's semantics inside workerd, through the front door with
 * Hrana JSON written by hand: batch conditions, transaction control carried
 * out by savepoints, sequences, the guard, exact values, and streams that
 * expire. Each case ends with the replicas identical.
 */
import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, freshCluster, verify } from "./helpers";

// Hrana JSON as the server wrote it: the tests read it field by field.
// biome-ignore lint/suspicious/noExplicitAny: untyped wire JSON under test
type Json = Record<string, any>;

const pipeline = (c: string, requests: unknown[], baton?: string | null) =>
  call<Json>("POST", `/libsql/${c}/v2/pipeline`, { body: { baton, requests } });

const stmt = (sql: string, args: unknown[] = []) => ({ sql, args });
const execute = (sql: string, args: unknown[] = []) => ({ type: "execute", stmt: stmt(sql, args) });
const close = { type: "close" };

async function rows(c: string, sql: string): Promise<unknown[][]> {
  const r = await pipeline(c, [execute(sql), close]);
  const result = r.body.results[0];
  if (result.type !== "ok") throw new Error(JSON.stringify(result));
  return result.response.result.rows.map((row: Json[]) => row.map((v) => v.value ?? null));
}

describe("batches", () => {
  it("evaluate ok, error, not, and, or and is_autocommit on earlier steps", async () => {
    const c = freshCluster("hrana-cond");
    const r = await pipeline(c, [
      {
        type: "batch",
        batch: {
          steps: [
            { stmt: stmt("SELECT 1") },
            { stmt: stmt("SELECT nope") },
            { stmt: stmt("SELECT 2"), condition: { type: "error", step: 1 } },
            { stmt: stmt("SELECT 3"), condition: { type: "ok", step: 1 } },
            {
              stmt: stmt("SELECT 4"),
              condition: {
                type: "and",
                conds: [
                  { type: "ok", step: 0 },
                  { type: "not", cond: { type: "ok", step: 3 } },
                ],
              },
            },
            {
              stmt: stmt("SELECT 5"),
              condition: {
                type: "or",
                conds: [
                  { type: "ok", step: 3 },
                  { type: "error", step: 3 },
                ],
              },
            },
            { stmt: stmt("SELECT 6"), condition: { type: "is_autocommit" } },
          ],
        },
      },
      close,
    ]);
    const result = r.body.results[0].response.result;
    const ran = result.step_results.map((s: Json | null) =>
      s === null ? null : s.rows[0][0].value,
    );
    expect(ran).toEqual(["1", null, "2", null, "4", null, "6"]);
    expect(result.step_errors[1].code).toBe("SQLITE_ERROR");
    expect(result.step_errors.filter((e: unknown) => e !== null)).toHaveLength(1);
  });

  it("refuse a condition on a later step before running anything", async () => {
    const c = freshCluster("hrana-cond-bad");
    await pipeline(c, [execute("CREATE TABLE t (a)"), close]);
    const r = await pipeline(c, [
      {
        type: "batch",
        batch: {
          steps: [
            { stmt: stmt("INSERT INTO t VALUES (1)") },
            { stmt: stmt("INSERT INTO t VALUES (2)"), condition: { type: "ok", step: 5 } },
          ],
        },
      },
      close,
    ]);
    expect(r.body.results[0].type).toBe("error");
    expect(await rows(c, "SELECT count(*) FROM t")).toEqual([["0"]]);
  });
});

describe("transaction control", () => {
  it("ROLLBACK undoes its transaction only; autocommit statements before it stay", async () => {
    const c = freshCluster("hrana-rollback");
    const r = await pipeline(c, [
      execute("CREATE TABLE t (a)"),
      execute("INSERT INTO t VALUES (1)"),
      execute("BEGIN"),
      execute("INSERT INTO t VALUES (2)"),
      execute("ROLLBACK"),
      execute("INSERT INTO t VALUES (3)"),
      execute("COMMIT"),
      execute("BEGIN"),
      execute("BEGIN"),
      execute("END"),
      close,
    ]);
    const types = r.body.results.map((x: Json) => x.type);
    expect(types).toEqual(["ok", "ok", "ok", "ok", "ok", "ok", "error", "ok", "error", "ok", "ok"]);
    expect(r.body.results[6].error.message).toMatch(/no transaction is active/);
    expect(r.body.results[8].error.message).toMatch(/within a transaction/);
    expect(await rows(c, "SELECT a FROM t ORDER BY a")).toEqual([["1"], ["3"]]);
    expect((await verify(c)).body.agree).toBe(true);
  });

  it("a failed statement inside a transaction undoes itself alone, as in SQLite", async () => {
    const c = freshCluster("hrana-stmt-undo");
    await pipeline(c, [execute("CREATE TABLE t (a UNIQUE)"), close]);
    const r = await pipeline(c, [
      execute("BEGIN"),
      execute("INSERT INTO t VALUES (1)"),
      execute("INSERT INTO t VALUES (2), (1)"),
      execute("INSERT INTO t VALUES (3)"),
      execute("COMMIT"),
      close,
    ]);
    expect(r.body.results[2].error.code).toBe("SQLITE_CONSTRAINT");
    expect(await rows(c, "SELECT a FROM t ORDER BY a")).toEqual([["1"], ["3"]]);
    expect((await verify(c)).body.agree).toBe(true);
  });

  it("a sequence stops at its first error, keeping what ran before it", async () => {
    const c = freshCluster("hrana-seq");
    const r = await pipeline(c, [
      {
        type: "sequence",
        sql: "CREATE TABLE s (a); INSERT INTO s VALUES (1); INSERT INTO nope VALUES (2); INSERT INTO s VALUES (3);",
      },
      close,
    ]);
    expect(r.body.results[0].type).toBe("error");
    expect(r.body.results[0].error.message).toMatch(/no such table/);
    expect(await rows(c, "SELECT a FROM s")).toEqual([["1"]]);
  });
});

describe("the guard holds through the endpoint", () => {
  it("keeps internal tables out of reach and other pragmas refused; 'now' replicates as its value", async () => {
    const c = freshCluster("hrana-guard");
    await pipeline(c, [execute("CREATE TABLE t (a, b)"), close]);
    const r = await pipeline(c, [
      execute("SELECT * FROM _repl_meta"),
      execute("PRAGMA journal_mode = OFF"),
      execute("INSERT INTO t VALUES (julianday('n' || 'ow'), 1)"),
      { type: "sequence", sql: "INSERT INTO t VALUES (1, 2); DELETE FROM _repl_meta" },
      execute("SELECT count(*) FROM _repl_results"),
      close,
    ]);
    const [internalRead, pragma, now, sequence, results] = r.body.results;
    expect(internalRead.type).toBe("error");
    expect(pragma.error.message).toMatch(/PRAGMA statements are not allowed/);
    expect(now.type).toBe("ok");
    expect(sequence.type).toBe("error");
    expect(results.type).toBe("error");
    // The sequence's first statement ran and stays, as in sqld; the second did nothing.
    expect(await rows(c, "SELECT b FROM t ORDER BY b")).toEqual([["1"], ["2"]]);
    // Rows replicate as the master wrote them, so every replica holds the same 'now'.
    expect((await verify(c)).body.agree).toBe(true);
  });
});

describe("PRAGMA foreign_keys = OFF", () => {
  it("refuses a DROP TABLE whose ON DELETE actions would change other rows, and keeps them all", async () => {
    const c = freshCluster("hrana-fk");
    await pipeline(c, [
      {
        type: "sequence",
        sql: `CREATE TABLE p (id INTEGER PRIMARY KEY);
              CREATE TABLE cascade_child (id INTEGER PRIMARY KEY, p REFERENCES p(id) ON DELETE CASCADE);
              CREATE TABLE null_child (id INTEGER PRIMARY KEY, p REFERENCES p(id) ON DELETE SET NULL);
              CREATE TABLE plain_child (id INTEGER PRIMARY KEY, p REFERENCES p(id));
              CREATE TABLE lone (id INTEGER PRIMARY KEY);
              INSERT INTO p VALUES (1); INSERT INTO cascade_child VALUES (1, 1);
              INSERT INTO null_child VALUES (1, 1); INSERT INTO lone VALUES (1);`,
      },
      close,
    ]);
    const rebuild = (table: string) => ({
      type: "batch",
      batch: {
        steps: [
          { stmt: stmt("PRAGMA foreign_keys=off") },
          { stmt: stmt("BEGIN") },
          { stmt: stmt(`DROP TABLE ${table}`), condition: { type: "ok", step: 1 } },
          { stmt: stmt("COMMIT"), condition: { type: "ok", step: 2 } },
          { stmt: stmt("ROLLBACK"), condition: { type: "not", cond: { type: "ok", step: 3 } } },
          { stmt: stmt("PRAGMA foreign_keys=on") },
        ],
      },
    });
    const cascading = await pipeline(c, [rebuild("p"), close]);
    const errors = cascading.body.results[0].response.result.step_errors;
    expect(errors[2].message).toMatch(
      /foreign_keys=OFF cannot be honoured.*cascade_child, null_child/,
    );
    expect(
      await rows(
        c,
        "SELECT (SELECT count(*) FROM p), (SELECT count(*) FROM cascade_child), (SELECT p FROM null_child)",
      ),
    ).toEqual([["1", "1", "1"]]);
    // Without the pragma, the same DROP runs SQLite's actions: that is what foreign keys on mean.
    const plainRows = await pipeline(c, [
      execute("DELETE FROM cascade_child"),
      execute("DELETE FROM null_child"),
      execute("INSERT INTO plain_child VALUES (1, 1)"),
      close,
    ]);
    expect(plainRows.body.results.every((r: Json) => r.type === "ok")).toBe(true);
    const noAction = await pipeline(c, [rebuild("p"), close]);
    expect(noAction.body.results[0].response.result.step_errors[2].code).toBe("SQLITE_CONSTRAINT");
    expect(await rows(c, "SELECT count(*) FROM p")).toEqual([["1"]]);
    const lone = await pipeline(c, [rebuild("lone"), close]);
    expect(lone.body.results[0].response.result.step_errors.every((e: unknown) => e === null)).toBe(
      true,
    );
    expect((await verify(c)).body.agree).toBe(true);
  });
});

describe("values", () => {
  it("come back exactly: 64-bit integers, -0.0, infinities, blobs, floats that look integral", async () => {
    const c = freshCluster("hrana-values");
    const response = await exports.default.fetch(
      new Request(`http://cluster.test/libsql/${c}/v2/pipeline`, {
        method: "POST",
        headers: { authorization: "Bearer dev-data-token" },
        body: JSON.stringify({
          requests: [
            execute("CREATE TABLE v (x)"),
            {
              type: "execute",
              stmt: {
                sql: "INSERT INTO v VALUES (?), (?), (?), (?), (9e999), (-9e999), (?)",
                args: [
                  { type: "integer", value: "9223372036854775807" },
                  { type: "float", value: 42 },
                  { type: "blob", base64: "AAEC" }, // unpadded is accepted too
                  { type: "text", value: "é\u0000x" },
                  { type: "float", value: -0.5 },
                ],
              },
            },
            execute("SELECT x, typeof(x) FROM v ORDER BY rowid"),
            execute("SELECT -0.0, CAST(x AS TEXT) FROM v WHERE rowid = 2"),
            close,
          ],
        }),
      }),
    );
    expect(response.headers.get("content-type")).toBe("application/json");
    const text = await response.text();
    expect(text).toContain('"value":1e999');
    expect(text).toContain('"value":-1e999');
    expect(text).toContain('"value":-0.0');
    const body = JSON.parse(text);
    const got = body.results[2].response.result.rows;
    expect(got[0]).toEqual([
      { type: "integer", value: "9223372036854775807" },
      { type: "text", value: "integer" },
    ]);
    expect(got[1][1]).toEqual({ type: "text", value: "real" });
    expect(got[2][0]).toEqual({ type: "blob", base64: "AAEC" });
    expect(got[3][0]).toEqual({ type: "text", value: "é\u0000x" });
    expect(got[4][0].value).toBe(Infinity);
    expect(got[5][0].value).toBe(-Infinity);
    expect(Object.is(body.results[3].response.result.rows[0][0].value, -0)).toBe(true);
    // A float 42 is a REAL: as text, "42.0", as sqld stores it.
    expect(body.results[3].response.result.rows[0][1]).toEqual({ type: "text", value: "42.0" });
    expect((await verify(c)).body.agree).toBe(true);
  });

  it("refuses an integer outside 64 bits, writing nothing", async () => {
    const c = freshCluster("hrana-int-range");
    await pipeline(c, [execute("CREATE TABLE v (x)"), close]);
    const r = await pipeline(c, [
      {
        type: "execute",
        stmt: {
          sql: "INSERT INTO v VALUES (?)",
          args: [{ type: "integer", value: "9223372036854775808" }],
        },
      },
      close,
    ]);
    expect(r.body.results[0].error.message).toMatch(/outside 64 bits/);
    expect(await rows(c, "SELECT count(*) FROM v")).toEqual([["0"]]);
  });
});

describe("streams", () => {
  it("expire when idle, and an open transaction in one is never written", async () => {
    const c = freshCluster("hrana-expire");
    await pipeline(c, [execute("CREATE TABLE t (a)"), close]);
    const open = await pipeline(c, [execute("BEGIN"), execute("INSERT INTO t VALUES (1)")]);
    const baton = open.body.baton as string;
    const ns = env.LIBSQL_STREAM;
    await runInDurableObject(ns.get(ns.idFromString(baton.slice(0, 64))), (_, state) => {
      const kept = JSON.parse(state.storage.kv.get<string>("stream") ?? "{}");
      state.storage.kv.put("stream", JSON.stringify({ ...kept, lastUsed: Date.now() - 60_000 }));
    });
    const late = await pipeline(c, [execute("COMMIT"), close], baton);
    expect(late.status).toBe(400);
    expect(late.body.code).toBe("STREAM_EXPIRED");
    expect(late.body.message).toMatch(/expired after 15 s/);
    expect(await rows(c, "SELECT count(*) FROM t")).toEqual([["0"]]);
  });

  it("answer a retry of the request a baton last carried with the same answer, once", async () => {
    const c = freshCluster("hrana-retry");
    await pipeline(c, [execute("CREATE TABLE t (a)"), close]);
    const open = await pipeline(c, [execute("BEGIN"), execute("INSERT INTO t VALUES (1)")]);
    const commit = [execute("COMMIT"), close];
    const first = await pipeline(c, commit, open.body.baton);
    const retry = await pipeline(c, commit, open.body.baton);
    expect(retry.body).toEqual(first.body);
    expect(await rows(c, "SELECT count(*) FROM t")).toEqual([["1"]]);
    const other = await pipeline(c, [execute("SELECT 1"), close], open.body.baton);
    expect(other.body.code).toBe("STREAM_EXPIRED");
  });
});
