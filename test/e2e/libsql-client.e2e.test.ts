/**
 * The libSQL endpoint through the real `@libsql/client` against `wrangler dev`:
 * every call the client makes (execute, batch, executeMultiple, migrate,
 * transaction), exact values both ways, errors with SQLite's code names, and
 * the stream's baton and expiry rules.
 */
import { createClient, LibsqlError, type Client } from "@libsql/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, startDevServer } from "./dev-server";

const DATA = "dev-data-token";
const ADMIN = "dev-admin-token";

let server: DevServer;
let db: Client;

function client(path = "libsql/libsql-e2e/", options: { intMode?: "bigint" | "number" } = {}) {
  return createClient({ url: `${server.url}/${path}`, authToken: DATA, ...options });
}

async function pipeline(body: unknown, path = "libsql/libsql-e2e/v2/pipeline", token = DATA) {
  const response = await fetch(`${server.url}/${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    bookmark: response.headers.get("x-bookmark"),
    type: response.headers.get("content-type"),
    json: await response.json(),
  };
}

async function verify(cluster: string) {
  const response = await fetch(`${server.url}/admin/clusters/${cluster}/verify`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  return (await response.json()) as { agree: boolean };
}

beforeAll(async () => {
  server = await startDevServer();
  db = client();
  await db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a, b TEXT UNIQUE)");
});

afterAll(async () => {
  db?.close();
  await server?.stop();
});

describe("@libsql/client against the cluster", () => {
  it("executes writes and reads, with lastInsertRowid and rowsAffected as the client types them", async () => {
    const insert = await db.execute({
      sql: "INSERT INTO t (a, b) VALUES (?, ?)",
      args: [1, "one"],
    });
    expect(insert.rowsAffected).toBe(1);
    expect(typeof insert.lastInsertRowid).toBe("bigint");
    const read = await db.execute({
      sql: "SELECT a, b FROM t WHERE id = ?",
      args: [insert.lastInsertRowid ?? 0n],
    });
    expect(read.columns).toEqual(["a", "b"]);
    // A JS number travels as a float: REAL 1.0 in a typeless column, as sqld stores it.
    expect(read.rows[0]?.a).toBe(1);
    expect(read.rows[0]?.b).toBe("one");
    const kind = await db.execute("SELECT typeof(a) AS k FROM t WHERE b = 'one'");
    expect(kind.rows[0]?.k).toBe("real");
  });

  it("binds named arguments with or without their prefix", async () => {
    await db.execute({ sql: "INSERT INTO t (a, b) VALUES (:x, $y)", args: { x: 7n, y: "named" } });
    const read = await db.execute({ sql: "SELECT a FROM t WHERE b = @b", args: { "@b": "named" } });
    expect(read.rows[0]?.a).toBe(7);
  });

  it("carries 64-bit integers and blobs exactly both ways", async () => {
    const exact = client("libsql/libsql-e2e/", { intMode: "bigint" });
    const big = 9007199254740993n;
    const min = -(2n ** 63n);
    const blob = new Uint8Array([0, 1, 2, 255, 254]);
    await exact.execute({ sql: "INSERT INTO t (a, b) VALUES (?, 'big')", args: [big] });
    await exact.execute({ sql: "INSERT INTO t (a, b) VALUES (?, 'min')", args: [min] });
    await exact.execute({ sql: "INSERT INTO t (a, b) VALUES (?, 'blob')", args: [blob] });
    const rows = await exact.execute(
      "SELECT b, a, typeof(a) AS k FROM t WHERE b IN ('big', 'min', 'blob') ORDER BY b",
    );
    const byName = Object.fromEntries(rows.rows.map((r) => [r.b, r]));
    expect(byName.big?.a).toBe(big);
    expect(byName.big?.k).toBe("integer");
    expect(byName.min?.a).toBe(min);
    expect(new Uint8Array(byName.blob?.a as ArrayBuffer)).toEqual(blob);
    const rowid = await exact.execute({
      sql: "INSERT INTO t (id, a, b) VALUES (?, 0, 'maxrowid')",
      args: [2n ** 62n],
    });
    expect(rowid.lastInsertRowid).toBe(2n ** 62n);
    exact.close();
  });

  it("returns RETURNING rows exactly: 64-bit integers, integral REALs, names as written", async () => {
    const exact = client("libsql/libsql-e2e/", { intMode: "bigint" });
    const big = 9007199254740993n;
    const r = await exact.execute({
      sql: "INSERT INTO t (a, b) VALUES (?, 'ret') RETURNING a, a * 1.0 AS real, ? AS p, ?",
      args: [big, 2.5, 7n],
    });
    expect(r.columns).toEqual(["a", "real", "p", "?"]);
    expect(r.rows[0]?.a).toBe(big);
    expect(r.rows[0]?.real).toBe(9007199254740992);
    expect(r.rows[0]?.p).toBe(2.5);
    expect(r.rows[0]?.["?"]).toBe(7n);
    exact.close();
  });

  it("keeps last_insert_rowid() and changes() per stream, across a transaction's requests", async () => {
    const tx = await db.transaction("write");
    const first = await tx.execute("SELECT last_insert_rowid() AS r, changes() AS c");
    expect(first.rows[0]).toMatchObject({ r: 0, c: 0 });
    await db.execute("INSERT INTO t (id, a, b) VALUES (90001, 0, 'elsewhere')");
    const mine = await tx.execute("INSERT INTO t (id, a, b) VALUES (80001, 1, 'mine')");
    const seen = await tx.execute("SELECT last_insert_rowid() AS r, changes() AS c");
    expect(seen.rows[0]).toMatchObject({ r: 80001, c: 1 });
    expect(mine.lastInsertRowid).toBe(80001n);
    await tx.commit();
  });

  it("runs a write batch as one transaction: a failing statement rolls every one back", async () => {
    const ok = await db.batch(
      [
        { sql: "INSERT INTO t (a, b) VALUES (10, 'b1')", args: [] },
        { sql: "INSERT INTO t (a, b) VALUES (11, 'b2') RETURNING a", args: [] },
      ],
      "write",
    );
    expect(ok).toHaveLength(2);
    expect(ok[1]?.rows[0]?.a).toBe(11);
    const error = await db
      .batch(
        [
          "INSERT INTO t (a, b) VALUES (12, 'b3')",
          "INSERT INTO t (a, b) VALUES (13, 'b1')", // UNIQUE b
        ],
        "write",
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LibsqlError);
    expect((error as LibsqlError).code).toBe("SQLITE_CONSTRAINT");
    expect((error as LibsqlError).message).toMatch(/UNIQUE constraint failed/);
    const count = await db.execute("SELECT count(*) AS n FROM t WHERE b = 'b3'");
    expect(count.rows[0]?.n).toBe(0);
  });

  it("runs a read batch and executeMultiple", async () => {
    const reads = await db.batch(["SELECT 1 AS one", "SELECT count(*) AS n FROM t"], "read");
    expect(reads[0]?.rows[0]?.one).toBe(1);
    await db.executeMultiple(`
      CREATE TABLE m (x);
      INSERT INTO m VALUES (1); -- a comment ; with a semicolon
      INSERT INTO m VALUES ('a;b');
    `);
    const m = await db.execute("SELECT x FROM m ORDER BY rowid");
    expect(m.rows.map((r) => r.x)).toEqual([1, "a;b"]);
  });

  it("commits an interactive transaction that spans requests, reading its own writes", async () => {
    const tx = await db.transaction("write");
    await tx.execute("INSERT INTO t (a, b) VALUES (20, 'tx1')");
    const seen = await tx.execute("SELECT a FROM t WHERE b = 'tx1'");
    expect(seen.rows[0]?.a).toBe(20);
    // Not visible outside before COMMIT.
    const outside = await db.execute("SELECT count(*) AS n FROM t WHERE b = 'tx1'");
    expect(outside.rows[0]?.n).toBe(0);
    await tx.commit();
    const after = await db.execute("SELECT a FROM t WHERE b = 'tx1'");
    expect(after.rows[0]?.a).toBe(20);
  });

  it("rolls back an interactive transaction, writing nothing", async () => {
    const tx = await db.transaction("write");
    await tx.execute("INSERT INTO t (a, b) VALUES (21, 'tx2')");
    await tx.rollback();
    const after = await db.execute("SELECT count(*) AS n FROM t WHERE b = 'tx2'");
    expect(after.rows[0]?.n).toBe(0);
  });

  it("refuses to commit a transaction another write overtook (serializable), writing nothing", async () => {
    await db.execute("INSERT INTO t (a, b) VALUES (0, 'counter')");
    const tx = await db.transaction("write");
    const read = await tx.execute("SELECT a FROM t WHERE b = 'counter'");
    await tx.execute({
      sql: "UPDATE t SET a = ? WHERE b = 'counter'",
      args: [Number(read.rows[0]?.a) + 1],
    });
    await db.execute("UPDATE t SET a = 100 WHERE b = 'counter'");
    const error = await tx.commit().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LibsqlError);
    expect((error as LibsqlError).code).toBe("TRANSACTION_CONFLICT");
    const after = await db.execute("SELECT a FROM t WHERE b = 'counter'");
    expect(after.rows[0]?.a).toBe(100);
  });

  it("turns away a read-only transaction's write", async () => {
    const tx = await db.transaction("read");
    const error = await tx
      .execute("INSERT INTO t (a, b) VALUES (1, 'ro')")
      .catch((e: unknown) => e);
    expect((error as LibsqlError).code).toBe("SQLITE_READONLY");
    await tx.rollback();
  });

  it("keeps every replica identical after all of the above", async () => {
    expect((await verify("libsql-e2e")).agree).toBe(true);
  });
});

describe("replication through the endpoint", () => {
  it("reads its own writes strongly from replicas, and says who served", async () => {
    const served: string[] = [];
    const watched = createClient({
      url: `${server.url}/libsql/libsql-e2e/`,
      authToken: DATA,
      fetch: async (request: Request) => {
        const response = await fetch(request);
        served.push(response.headers.get("x-served-by") ?? "");
        return response;
      },
    });
    await watched.execute("CREATE TABLE strong (k TEXT PRIMARY KEY, v)");
    for (let i = 0; i < 5; i++) {
      await watched.execute({ sql: "INSERT INTO strong VALUES (?, ?)", args: [`k${i}`, i] });
      const read = await watched.execute({
        sql: "SELECT v FROM strong WHERE k = ?",
        args: [`k${i}`],
      });
      expect(read.rows[0]?.v).toBe(i);
    }
    watched.close();
    const reads = served.filter((_, i) => i > 0 && i % 2 === 0);
    expect(reads.length).toBe(5);
    expect(reads.every((by) => /^replica-\d+$/.test(by))).toBe(true);
    expect(served[1]).toBe("master");
  });

  it("reads at a bookmark or at any consistency, chosen by the base URL or a header", async () => {
    const write = await pipeline({
      requests: [
        { type: "execute", stmt: { sql: "INSERT INTO t (a, b) VALUES (5, 'bookmarked')" } },
        { type: "close" },
      ],
    });
    const response = await fetch(`${server.url}/libsql/libsql-e2e/v2/pipeline`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${DATA}`,
        "x-consistency": "bookmark",
        "x-bookmark": write.bookmark ?? "",
      },
      body: JSON.stringify({
        requests: [
          { type: "execute", stmt: { sql: "SELECT a FROM t WHERE b = 'bookmarked'" } },
          { type: "close" },
        ],
      }),
    });
    const body = (await response.json()) as {
      results: { response: { result: { rows: unknown[][] } } }[];
    };
    expect(body.results[0]?.response.result.rows[0]?.[0]).toEqual({ type: "integer", value: "5" });
    const missing = await pipeline(
      { requests: [{ type: "execute", stmt: { sql: "SELECT 1" } }, { type: "close" }] },
      "libsql/libsql-e2e/bookmark/v2/pipeline",
    );
    expect(missing.status).toBe(400);
    expect(missing.json.code).toBe("BOOKMARK_INVALID");
    const any = createClient({ url: `${server.url}/libsql/libsql-e2e/any/`, authToken: DATA });
    expect((await any.execute("SELECT count(*) AS n FROM t")).rows[0]?.n).toBeGreaterThan(0);
    any.close();
    const bad = await pipeline(
      { requests: [{ type: "close" }] },
      "libsql/libsql-e2e/eventual/v2/pipeline",
    );
    expect(bad.status).toBe(404);
  });

  it("answers a retry with the same Idempotency-Key from the saved result, without running it again", async () => {
    const body = {
      requests: [
        {
          type: "batch",
          batch: {
            steps: [
              { stmt: { sql: "BEGIN IMMEDIATE" } },
              {
                stmt: { sql: "INSERT INTO t (a, b) VALUES (1, 'once') RETURNING id" },
                condition: { type: "ok", step: 0 },
              },
              { stmt: { sql: "COMMIT" }, condition: { type: "ok", step: 1 } },
              {
                stmt: { sql: "ROLLBACK" },
                condition: { type: "not", cond: { type: "ok", step: 2 } },
              },
            ],
          },
        },
        { type: "close" },
      ],
    };
    const send = (payload: unknown) =>
      fetch(`${server.url}/libsql/libsql-e2e/v2/pipeline`, {
        method: "POST",
        headers: { authorization: `Bearer ${DATA}`, "idempotency-key": "libsql-once-1" },
        body: JSON.stringify(payload),
      }).then(async (r) => ({ status: r.status, json: await r.json() }));
    const first = await send(body);
    const retry = await send(body);
    expect(retry.status).toBe(200);
    expect(retry.json.results).toEqual(first.json.results);
    const count = await db.execute("SELECT count(*) AS n FROM t WHERE b = 'once'");
    expect(count.rows[0]?.n).toBe(1);
    const reused = await send({
      requests: [
        { type: "execute", stmt: { sql: "INSERT INTO t (a) VALUES (2)" } },
        { type: "close" },
      ],
    });
    expect(reused.json.results[0].error.code).toBe("IDEMPOTENCY_KEY_REUSED");
  });
});

describe("the endpoint's own rules", () => {
  it("answers a URL without its trailing slash with an error that says so, running nothing", async () => {
    const noSlash = createClient({ url: `${server.url}/libsql/libsql-e2e`, authToken: DATA });
    const error = await noSlash.execute("CREATE TABLE wrong (x)").catch((e: unknown) => e);
    expect((error as LibsqlError).message).toMatch(/must end with a slash/);
    noSlash.close();
  });

  it("refuses a wrong token with a JSON error the client can read", async () => {
    const bad = createClient({ url: `${server.url}/libsql/libsql-e2e/`, authToken: "nope" });
    const error = await bad.execute("SELECT 1").catch((e: unknown) => e);
    expect((error as LibsqlError).code).toBe("UNAUTHORIZED");
    bad.close();
    const raw = await pipeline({ requests: [] }, "libsql/libsql-e2e/v2/pipeline", "nope");
    expect(raw.status).toBe(401);
    expect(raw.type).toBe("application/json");
  });

  it("gives one result per request, step errors in step_errors, and a signed single-use baton", async () => {
    const first = await pipeline({
      requests: [
        { type: "store_sql", sql_id: 1, sql: "SELECT ? AS v" },
        {
          type: "execute",
          stmt: { sql_id: 1, args: [{ type: "integer", value: "-9223372036854775808" }] },
        },
        {
          type: "batch",
          batch: {
            steps: [
              { stmt: { sql: "SELECT nope FROM t" } },
              { stmt: { sql: "SELECT 2" }, condition: { type: "error", step: 0 } },
              { stmt: { sql: "SELECT 3" }, condition: { type: "ok", step: 0 } },
            ],
          },
        },
      ],
    });
    expect(first.status).toBe(200);
    const results = first.json.results;
    expect(results).toHaveLength(3);
    expect(results[1].response.result.rows[0][0]).toEqual({
      type: "integer",
      value: "-9223372036854775808",
    });
    expect(results[2].response.result.step_errors[0].code).toBe("SQLITE_ERROR");
    expect(results[2].response.result.step_results[1].rows[0][0]).toEqual({
      type: "integer",
      value: "2",
    });
    expect(results[2].response.result.step_results[2]).toBeNull();
    const baton = first.json.baton as string;
    expect(typeof baton).toBe("string");
    const again = await pipeline({
      baton,
      requests: [{ type: "execute", stmt: { sql_id: 1, args: [{ type: "null" }] } }],
    });
    expect(again.json.results[0].type).toBe("ok");
    const reused = await pipeline({ baton, requests: [{ type: "close" }] });
    expect(reused.status).toBe(400);
    expect(reused.json.code).toBe("STREAM_EXPIRED");
    const forged = await pipeline({
      baton: `${baton.slice(0, -2)}AA`,
      requests: [{ type: "close" }],
    });
    expect(forged.json.code).toBe("BATON_INVALID");
    const otherCluster = await pipeline(
      { baton: again.json.baton, requests: [{ type: "close" }] },
      "libsql/other-cluster/v2/pipeline",
    );
    expect(otherCluster.json.code).toBe("BATON_INVALID");
    const closed = await pipeline({ baton: again.json.baton, requests: [{ type: "close" }] });
    expect(closed.json.baton).toBeNull();
  });
});
