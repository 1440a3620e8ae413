/**
 * Adversarial reproductions against the libSQL endpoint (Hrana over HTTP v2),
 * each against `wrangler dev` with hand-written Hrana JSON. Every test asserts
 * the behaviour the endpoint promises; each once failed because of the break
 * its comment describes. Each test uses a cluster of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, startDevServer } from "./dev-server";

const DATA = "dev-data-token";
const ADMIN = "dev-admin-token";

let server: DevServer;

beforeAll(async () => {
  server = await startDevServer();
});

afterAll(async () => {
  await server?.stop();
});

interface Hrana {
  status: number;
  type: string | null;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: raw protocol bodies are inspected freely
  json: any;
}

/** POSTs a pipeline body (an object, or raw JSON text so that -0.0 and 1e999 survive). */
async function pipeline(
  cluster: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Hrana> {
  const response = await fetch(`${server.url}/libsql/${cluster}/v2/pipeline`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${DATA}`,
      "content-type": "application/json",
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: response.status, type: response.headers.get("content-type"), text, json };
}

const ex = (sql: string, extra: Record<string, unknown> = {}) => ({
  type: "execute",
  stmt: { sql, ...extra },
});
const close = { type: "close" };

/** Runs statements in a stream of their own (opened and closed in one request). */
async function run(cluster: string, ...sql: string[]): Promise<Hrana> {
  const r = await pipeline(cluster, { requests: [...sql.map((s) => ex(s)), close] });
  expect(r.status).toBe(200);
  return r;
}

/** The rows of the first result of a one-statement request, as plain JS values. */
async function rows(cluster: string, sql: string): Promise<unknown[][]> {
  const r = await run(cluster, sql);
  const result = r.json.results[0];
  expect(result.type).toBe("ok");
  return result.response.result.rows.map((row: { type: string; value?: unknown }[]) =>
    row.map((v) => (v.type === "null" ? null : v.value)),
  );
}

async function admin(path: string, method = "GET", body?: unknown): Promise<unknown> {
  const response = await fetch(`${server.url}/admin/clusters/${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(response.status).toBe(200);
  return response.json();
}

async function masterEpoch(cluster: string): Promise<number> {
  const status = (await admin(`${cluster}/status`)) as { master: { epoch: number } };
  return status.master.epoch;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("libSQL endpoint under attack", () => {
  // Promise 1 and 6 (safety, never a 5xx for bad input): `INSERT OR ROLLBACK`
  // (also a column's `ON CONFLICT ROLLBACK`, a trigger's `RAISE(ROLLBACK, …)`)
  // passes the guard; SQLite's ROLLBACK then destroys workerd's
  // transactionSync savepoints ("no such savepoint: _cf_sync_savepoint"), the
  // master Durable Object is reset (status.master.epoch goes up), the client
  // gets UNAVAILABLE "internal error; retry", and every write in flight at that
  // moment is answered with that error too, although many of them committed
  // and replicated. Any data-token client can do this at will. (/exec has the
  // same hole: it shares the guard.)
  it("a conflict under OR ROLLBACK is a statement error, not a reset of the master that fails committed writes", async () => {
    const c = "atk-or-rollback";
    await run(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)", "INSERT INTO t VALUES (1, 'a')");
    const before = await masterEpoch(c);
    const lone = await run(c, "INSERT OR ROLLBACK INTO t VALUES (1, 'x')");
    expect(lone.json.results[0].type).toBe("error");
    expect(lone.json.results[0].error.code).not.toBe("UNAVAILABLE");
    expect(await masterEpoch(c)).toBe(before);

    // Writes in flight beside it: whatever a client is told must be what happened.
    const inserts = Array.from({ length: 20 }, (_, i) => 100 + i);
    const answers = await Promise.all([
      ...inserts.slice(0, 10).map((id) => run(c, `INSERT INTO t VALUES (${id}, 'c')`)),
      run(c, "INSERT OR ROLLBACK INTO t VALUES (1, 'x')"),
      ...inserts.slice(10).map((id) => run(c, `INSERT INTO t VALUES (${id}, 'c')`)),
    ]);
    const told = answers
      .filter((_, i) => i !== 10)
      .map((a, i) => [inserts[i], a.json.results[0].type === "ok"] as const);
    const present = new Set((await rows(c, "SELECT id FROM t WHERE v = 'c'")).map((r) => r[0]));
    const lies = told.filter(([id, ok]) => ok !== present.has(String(id))).map(([id]) => id);
    expect(lies).toEqual([]);
  });

  // Promise 2 (same key + different body → error): the saved result's hash is
  // sha256(cluster, requests) and leaves the baton out, so two different
  // transactions whose COMMIT request reads the same, `[execute COMMIT]`, are
  // "the same body". Stream B's COMMIT under a key stream A used is answered
  // from A's saved result (ok, A's replication_index), B's row is never
  // written, and B's client is told its transaction committed.
  it("a reused Idempotency-Key on another stream's COMMIT is refused, never answered as committed", async () => {
    const c = "atk-key-baton";
    await run(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const a = await pipeline(c, { requests: [ex("BEGIN"), ex("INSERT INTO t VALUES (1, 'A')")] });
    const b = await pipeline(c, { requests: [ex("BEGIN"), ex("INSERT INTO t VALUES (2, 'B')")] });
    const key = `atk-key-${Date.now()}`;
    const commitA = await pipeline(
      c,
      { baton: a.json.baton, requests: [ex("COMMIT"), close] },
      { "idempotency-key": key },
    );
    expect(commitA.json.results[0].type).toBe("ok");
    const commitB = await pipeline(
      c,
      { baton: b.json.baton, requests: [ex("COMMIT"), close] },
      { "idempotency-key": key },
    );
    const ids = (await rows(c, "SELECT id FROM t ORDER BY id")).map((r) => r[0]);
    if (commitB.json.results?.[0]?.type === "ok") expect(ids).toContain("2");
    expect(commitB.json.results?.[0]?.error?.code ?? commitB.json.code).toBe(
      "IDEMPOTENCY_KEY_REUSED",
    );
  });

  // Promise 3 (never run later statements outside the transaction the client
  // believes it is in): a request whose replay conflicts answers
  // TRANSACTION_CONFLICT and silently drops the stream's transaction
  // (state.open = null). The client, which sent no ROLLBACK, goes on with the
  // same baton: its next INSERT runs in autocommit and is committed and
  // replicated at once; its COMMIT then fails with "no transaction is active".
  // @libsql/client speaks v2 here (GET /v3 is 404), so it does not guard its
  // transaction's statements with `not(is_autocommit)`: tx.execute() does this.
  it("after a TRANSACTION_CONFLICT, the stream's next statements are not committed on their own", async () => {
    const c = "atk-after-conflict";
    await run(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)", "CREATE TABLE log (x)");
    await run(c, "INSERT INTO t VALUES (1, 0)");
    const tx = await pipeline(c, { requests: [ex("BEGIN"), ex("SELECT v FROM t WHERE id = 1")] });
    await run(c, "UPDATE t SET v = 5 WHERE id = 1");
    const conflicted = await pipeline(c, {
      baton: tx.json.baton,
      requests: [ex("INSERT INTO log VALUES ('in-tx-1')")],
    });
    expect(conflicted.json.results[0].error.code).toBe("TRANSACTION_CONFLICT");
    const next = await pipeline(c, {
      baton: conflicted.json.baton,
      requests: [ex("INSERT INTO log VALUES ('in-tx-2')")],
    });
    await pipeline(c, { baton: next.json.baton, requests: [ex("COMMIT"), close] });
    // The transaction never committed: nothing it ran may be in the database.
    expect(await rows(c, "SELECT x FROM log")).toEqual([]);
  });

  // Promise 2 (no partial writes, truthful answers): the 1,000-statement cap
  // of an open transaction is checked after the program committed. A pipeline
  // [INSERT (autocommit), BEGIN, 1,200 SELECTs in two batches] commits and replicates
  // the INSERT, then every result, the INSERT's included, is replaced by
  // TRANSACTION_TOO_LARGE "it was rolled back". (The stream's transaction is
  // also dropped, with the same consequence as the test above.)
  it("TRANSACTION_TOO_LARGE does not report an autocommitted write as failed while committing it", async () => {
    const c = "atk-too-large";
    await run(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    // Two batches of 600 (a batch may hold 1,000 steps, a pipeline 10,000 statements).
    const steps = Array.from({ length: 600 }, () => ({ stmt: { sql: "SELECT 1" } }));
    const r = await pipeline(c, {
      requests: [
        ex("INSERT INTO t VALUES (1, 'autocommitted')"),
        ex("BEGIN"),
        { type: "batch", batch: { steps } },
        { type: "batch", batch: { steps } },
      ],
    });
    expect(r.status).toBe(200);
    const insertOk = r.json.results[0].type === "ok";
    const written = (await rows(c, "SELECT count(*) FROM t"))[0]?.[0] === "1";
    // Whatever the client is told about the INSERT must be what happened to it.
    expect({ insertOk, written }).toEqual({ insertOk: written, written });
  });

  // Promise 1 (PRAGMA foreign_keys honoured by the endpoint): the stream keeps
  // foreign_keys=OFF, but a request of plain reads is served by replicas, whose
  // answer carries foreignKeysOff: false, and runPipeline copies that into the
  // stream. After [PRAGMA foreign_keys=OFF] → [SELECT …] → [DROP TABLE parent],
  // the DROP is no longer refused: it runs ON DELETE CASCADE and the child's
  // rows are gone (the loss the refusal exists to prevent). Without the
  // SELECT in between, the same DROP is refused.
  it("a read between PRAGMA foreign_keys=OFF and a DROP TABLE does not re-enable cascades", async () => {
    const c = "atk-fk-reset";
    await run(
      c,
      "CREATE TABLE parent (id INTEGER PRIMARY KEY)",
      "CREATE TABLE child (id INTEGER PRIMARY KEY, p INTEGER REFERENCES parent(id) ON DELETE CASCADE)",
      "INSERT INTO parent VALUES (1)",
      "INSERT INTO child VALUES (10, 1)",
    );
    const off = await pipeline(c, { requests: [ex("PRAGMA foreign_keys=OFF")] });
    const read = await pipeline(c, {
      baton: off.json.baton,
      requests: [ex("SELECT count(*) FROM child")],
    });
    const drop = await pipeline(c, {
      baton: read.json.baton,
      requests: [ex("DROP TABLE parent"), close],
    });
    expect(drop.json.results[0].type).toBe("error");
    expect(await rows(c, "SELECT count(*) FROM child")).toEqual([["1"]]);
  });

  // Promise 1 (values exact end to end, 64-bit integers both ways): rows a
  // write returns (RETURNING, what Drizzle's .returning() and Kysely's
  // returning() use) come from the runtime as doubles: INTEGER
  // 9007199254740993 comes back as {"type":"float","value":9007199254740992},
  // REAL 2.0 as {"type":"integer","value":"2"}, REAL -0.0 as integer "0". The
  // same row read by SELECT is exact.
  it("RETURNING gives 64-bit integers, integral REALs and -0.0 exactly", async () => {
    const c = "atk-returning";
    await run(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, r, z)");
    const r = await pipeline(
      c,
      '{"requests":[{"type":"execute","stmt":{"sql":"INSERT INTO t VALUES (9007199254740993, 2.0, ?) RETURNING id, r, z","args":[{"type":"float","value":-0.0}]}},{"type":"close"}]}',
    );
    const [id, real, negZero] = r.json.results[0].response.result.rows[0];
    expect(id).toEqual({ type: "integer", value: "9007199254740993" });
    expect(real).toEqual({ type: "float", value: 2 });
    expect(negZero.type).toBe("float");
    expect(Object.is(negZero.value, -0)).toBe(true);
  });

  // Promises 2 and 4 (exactly-once retries under Idempotency-Key; a retry of
  // the last request): a stream's COMMIT answered COMMIT_TIMEOUT ("retry with
  // the same Idempotency-Key") is cached by the stream object; the identical
  // retry, once the commit is acknowledged, gets the stale COMMIT_TIMEOUT
  // again instead of the committed result, for ever. (Sending the same key
  // without the baton does get the result: the hash ignores the baton.)
  it("retrying a stream's COMMIT that timed out, with the same baton and key, gets the committed result", async () => {
    const c = "atk-timeout-retry";
    await run(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    await admin(`${c}/tunables`, "PATCH", {
      commit_timeout_ms: 1000,
      rep_timeout_ms: 1000,
      debug_ack_delay_ms: 1500,
    });
    const tx = await pipeline(c, { requests: [ex("BEGIN"), ex("INSERT INTO t VALUES (1, 'x')")] });
    const key = `atk-timeout-${Date.now()}`;
    const body = { baton: tx.json.baton, requests: [ex("COMMIT")] };
    const first = await pipeline(c, body, { "idempotency-key": key });
    expect(first.json.results[0].error?.code).toBe("COMMIT_TIMEOUT");
    await admin(`${c}/tunables`, "PATCH", { debug_ack_delay_ms: 0 });
    await sleep(4000);
    expect(await rows(c, "SELECT id FROM t")).toEqual([["1"]]);
    const retry = await pipeline(c, body, { "idempotency-key": key });
    expect(retry.json.results[0].type).toBe("ok");
  });

  // Promise 4 (streams expire after 15 s idle): the stream lives only in the
  // LibsqlStream object's memory, and workerd evicts an idle object after
  // about 10 s, so under `wrangler dev` (npm start) a transaction idle for
  // 10.5-14 s is already "unknown here (it expired, or its object
  // restarted)". An identical retry of the last request loses its saved
  // answer the same way.
  it("a stream idle for 12 s (under the 15 s timeout) still holds its transaction", async () => {
    const c = "atk-idle";
    await run(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const tx = await pipeline(c, { requests: [ex("BEGIN"), ex("INSERT INTO t VALUES (1, 'x')")] });
    await sleep(12_000);
    const commit = await pipeline(c, { baton: tx.json.baton, requests: [ex("COMMIT"), close] });
    expect(commit.status).toBe(200);
    expect(commit.json.results?.[0]?.type).toBe("ok");
  });

  // Promise 6 (never a 5xx, never "retry", for malformed input): the
  // condition depth limit (32) is checked after zod parses the body; zod's
  // recursive parse of a 3,000-deep `not` (a 66 KB body) overflows the stack,
  // and "Maximum call stack size exceeded" is classed as transient: 503
  // UNAVAILABLE with Retry-After, which a client retries for ever. 1,000
  // deep is answered correctly ("condition nested too deep").
  it("a deeply nested condition is a 400-class refusal, not a retryable 503", async () => {
    const c = "atk-deep";
    const depth = 3000;
    const body =
      '{"requests":[{"type":"batch","batch":{"steps":[{"stmt":{"sql":"SELECT 1"}},{"condition":' +
      '{"type":"not","cond":'.repeat(depth) +
      '{"type":"ok","step":0}' +
      "}".repeat(depth) +
      ',"stmt":{"sql":"SELECT 2"}}]}},{"type":"close"}]}';
    const r = await pipeline(c, body);
    expect(r.type).toBe("application/json");
    expect(r.status).not.toBe(503);
    expect(r.text).not.toContain("UNAVAILABLE");
  });

  // Promise 3: a ROLLBACK request replays the transaction first, so when
  // another write changed what it read, ROLLBACK itself fails with
  // TRANSACTION_CONFLICT. SQLite never fails a ROLLBACK; Drizzle and Kysely
  // then throw the conflict from their rollback path instead of the user's
  // error.
  it("ROLLBACK succeeds even when another write overtook the transaction", async () => {
    const c = "atk-rollback-conflict";
    await run(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)", "INSERT INTO t VALUES (1, 0)");
    const tx = await pipeline(c, { requests: [ex("BEGIN"), ex("SELECT v FROM t WHERE id = 1")] });
    await run(c, "UPDATE t SET v = 1 WHERE id = 1");
    const rollback = await pipeline(c, { baton: tx.json.baton, requests: [ex("ROLLBACK"), close] });
    expect(rollback.json.results[0].type).toBe("ok");
  });

  // last_insert_rowid()/changes() are connection state; every stream shares
  // the master's (or a replica's) one connection, so a fresh stream sees the
  // rowid and change count of whichever request ran last, another client's
  // or the node's own bookkeeping. A fresh sqld stream (a new connection)
  // answers 0 and 0.
  it("a fresh stream's last_insert_rowid() and changes() are 0, not another client's", async () => {
    const c = "atk-connection-state";
    await run(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    await run(c, "INSERT INTO t VALUES (4242, 'someone else')");
    const r = await run(c, "BEGIN", "SELECT last_insert_rowid(), changes()", "COMMIT");
    expect(r.json.results[1].response.result.rows[0]).toEqual([
      { type: "integer", value: "0" },
      { type: "integer", value: "0" },
    ]);
  });

  // Result column names are SQLite's names for the statement as written; the
  // guard's parameter rewrite leaks into them: `SELECT ?` with an integer is
  // named "CAST(?1 AS INTEGER)", `SELECT :x` is named "?1". @libsql/client
  // keys row objects by these names.
  it("column names are those of the SQL as sent, not of the parameter rewrite", async () => {
    const c = "atk-colnames";
    const r = await pipeline(c, {
      requests: [
        ex("SELECT ?", { args: [{ type: "integer", value: "5" }] }),
        ex("SELECT :x", { named_args: [{ name: "x", value: { type: "text", value: "hi" } }] }),
        close,
      ],
    });
    expect(r.json.results[0].response.result.cols[0].name).toBe("?");
    expect(r.json.results[1].response.result.cols[0].name).toBe(":x");
  });
});
