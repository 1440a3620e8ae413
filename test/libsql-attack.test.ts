/**
 * Adversarial reproductions against the libSQL endpoint (Hrana over HTTP v2)
 * inside workerd, with hand-written Hrana JSON through the front door. They
 * attack the recent changes: exact RETURNING rows (core/returning.ts), result
 * names mapped back to the SQL as sent (originalNames), and the per-stream
 * connection counters (core/connection-counters.ts).
 *
 * Each test asserts the behaviour the issue or the docs promise, and once
 * failed because of the break its comment describes. The "held" block keeps
 * attacks that were tried and held then. Ground truth for SQLite's own
 * behaviour was taken from the sqlite3 library (3.40), which libSQL/sqld share.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, freshCluster, verify } from "./helpers";
import { sameOnEveryNode } from "./review-helpers";

// biome-ignore lint/suspicious/noExplicitAny: untyped wire JSON under test
type Json = Record<string, any>;

const pipeline = (c: string, requests: unknown[], baton?: string | null) =>
  call<Json>("POST", `/libsql/${c}/v2/pipeline`, { body: { baton, requests } });
/** A raw JSON body, so that -0.0 survives. */
const pipelineRaw = (c: string, body: string) =>
  call<Json>("POST", `/libsql/${c}/v2/pipeline`, { raw: body });
const stmt = (sql: string, args: unknown[] = []) => ({ sql, args });
const execute = (sql: string, args: unknown[] = []) => ({ type: "execute", stmt: stmt(sql, args) });
const close = { type: "close" };
const int = (value: string | number) => ({ type: "integer", value: String(value) });

/**
 * Ground truth from the platform itself: the statements as sent, run one by
 * one on the SQLite of a scratch Durable Object (a libSQL stream object, whose
 * storage is SQLite), each giving its rows as arrays or its error message.
 */
async function rawSql(...sql: string[]): Promise<(unknown[][] | string)[]> {
  const ns = env.LIBSQL_STREAM as unknown as DurableObjectNamespace;
  return runInDurableObject(ns.get(ns.newUniqueId()), (_, state) =>
    sql.map((text) => {
      try {
        return [...state.storage.sql.exec(text).raw()];
      } catch (error) {
        return `error: ${(error as Error).message}`;
      }
    }),
  );
}

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
const values = (result: Json): unknown[][] =>
  okResult(result).rows.map((row: Json[]) => row.map((v) => (v.type === "null" ? null : v.value)));
const names = (result: Json): string[] => okResult(result).cols.map((c: Json) => c.name);

describe("exact RETURNING rows (core/returning.ts)", () => {
  // Promise: a Drizzle app written for Turso runs unchanged; RETURNING rows are
  // exact. Drizzle's `.returning()` lists every column of the table. Durable
  // Object SQLite allows 100 columns in a table and in a result set; the
  // extension appends one cell per item, doubling the result's width, so any
  // `RETURNING *` (or a returning() of all columns) on a table of 51 to 100
  // columns fails with "too many columns in result set" (SQLITE_ERROR),
  // although the same table reads fine with SELECT *. Nothing is written.
  it("RETURNING * on a table of 60 columns works, as SELECT * on it does", async () => {
    const c = freshCluster("atk-wide");
    const cols = Array.from({ length: 60 }, (_, i) => `c${i}`).join(", ");
    await setup(c, `CREATE TABLE w (id INTEGER PRIMARY KEY, ${cols})`);
    expect(names(await one(c, "SELECT * FROM w"))).toHaveLength(61);
    // The platform's SQLite runs the statement as sent.
    const [, raw] = await rawSql(
      `CREATE TABLE w (id INTEGER PRIMARY KEY, ${cols})`,
      "INSERT INTO w (c0) VALUES (1) RETURNING *",
    );
    expect((raw as unknown[][])[0]).toHaveLength(61);
    const r = await one(c, "INSERT INTO w (c0) VALUES (1) RETURNING *");
    // Today: {"type":"error","error":{"message":"too many columns in result set: SQLITE_ERROR"}}
    expect(names(r)).toHaveLength(61);
  });

  // Same cause, 51 items of an explicit list: the clause's width limit is
  // halved for every writer.
  it("a RETURNING list of 51 items works", async () => {
    const c = freshCluster("atk-wide-list");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const items = Array.from({ length: 51 }, (_, i) => `v + ${i}`).join(", ");
    const r = await one(c, `INSERT INTO t (v) VALUES (1) RETURNING ${items}`);
    // Today: "too many columns in result set: SQLITE_ERROR".
    expect(values(r)[0]).toHaveLength(51);
  });

  // Promise: the statement runs as SQLite runs it. Each cell repeats its item's
  // text inside a subquery, so a statement under Durable Objects' 100 KB limit
  // grows past it: a 60 KB INSERT ... RETURNING '<50 KB literal>' is refused
  // as "statement too long: SQLITE_TOOBIG", a limit the client never crossed
  // (a 90 KB SELECT of the same literals runs).
  it("a 55 KB statement with a long RETURNING item is not 'too long'", async () => {
    const c = freshCluster("atk-toobig");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const big = "x".repeat(55_000);
    const [, raw] = await rawSql(
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      `INSERT INTO t (v) VALUES (1) RETURNING '${big}' AS s`,
    );
    expect(raw).toEqual([[big]]);
    okResult(await one(c, `SELECT '${big}' AS s, '${big.slice(0, 30_000)}' AS u`));
    const r = await one(c, `INSERT INTO t (v) VALUES (1) RETURNING '${big}' AS s`);
    // Today: {"message":"statement too long: SQLITE_TOOBIG","code":"SQLITE_TOOBIG"}
    expect(values(r)[0]?.[0]).toBe(big);
  });

  // Promise: the statement runs as SQLite runs it. Durable Object SQLite keeps
  // expression trees to depth 100; the cell wraps each item a few levels
  // deeper, so an item of depth 95 is refused in RETURNING ("Expression tree is
  // too large (maximum depth 100)") while the same expression runs in a SELECT
  // and in the INSERT's VALUES.
  it("a RETURNING item as deep as one SELECT and VALUES accept is accepted", async () => {
    const c = freshCluster("atk-depth");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const deep = Array.from({ length: 95 }, () => "1").join(" + ");
    const [, raw] = await rawSql(
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      `INSERT INTO t (v) VALUES (1) RETURNING ${deep}`,
    );
    expect(raw).toEqual([[95]]);
    expect(values(await one(c, `SELECT ${deep}`))).toEqual([["95"]]);
    okResult(await one(c, `INSERT INTO t (v) VALUES (${deep})`));
    const r = await one(c, `INSERT INTO t (v) VALUES (1) RETURNING ${deep}`);
    // Today: "Expression tree is too large (maximum depth 100): SQLITE_ERROR".
    expect(values(r)).toEqual([["95"]]);
  });

  // Promise: RETURNING rows are exact (64-bit integers). dmlTarget() takes the
  // first INSERT/REPLACE/UPDATE/DELETE word at depth 0 as the statement's verb,
  // and REPLACE is also a name SQLite accepts for a CTE. With `WITH replace AS
  // (...)` the target is read as the table "AS", `*` cannot be expanded, the
  // clause is left unextended and the rows come back as the runtime's doubles:
  // the INTEGER 9007199254740993 arrives as the float 9007199254740992.
  it("RETURNING * after a CTE named replace is exact", async () => {
    const c = freshCluster("atk-replace-cte");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const r = await one(c, "WITH replace AS (SELECT 1) INSERT INTO t (v) VALUES (?) RETURNING *", [
      int("9007199254740993"),
    ]);
    // Today: [{"type":"integer","value":"1"},{"type":"float","value":9007199254740992}]
    expect(okResult(r).rows[0][1]).toEqual(int("9007199254740993"));
  });

  // Promise: per-statement errors with SQLite's code names, never an internal
  // error for a statement. Same misreading, with a table named "AS" present:
  // `*` is expanded to "AS"'s one column while SQLite returns t's two, so
  // readReturning throws a plain Error, and the client is told
  // `UNAVAILABLE: internal error; retry (with the same Idempotency-Key for
  // writes)`: a deterministic statement reported as a retryable outage.
  it("RETURNING * after a CTE named replace, with a table named AS, is not an internal error", async () => {
    const c = freshCluster("atk-replace-as");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)", 'CREATE TABLE "AS" (x)');
    const r = await one(c, "WITH replace AS (SELECT 1) INSERT INTO t (v) VALUES (2) RETURNING *");
    // Today: {"type":"error","error":{"message":"internal error; retry (...)","code":"UNAVAILABLE"}}
    expect(values(r)).toEqual([["1", "2"]]);
  });

  // Promise: a statement's error is SQLite's. The client sent no comma;
  // SQLite says "incomplete input" for this text. The error describes the
  // extended clause instead: `near ",": syntax error at offset 84`.
  it("a truncated RETURNING clause gets SQLite's error for the SQL as sent", async () => {
    const c = freshCluster("atk-trunc");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const [, raw] = await rawSql(
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      "DELETE FROM t WHERE id = 2 RETURNING v AS",
    );
    expect(raw).toMatch(/incomplete input/);
    const r = await one(c, "DELETE FROM t WHERE id = 2 RETURNING v AS");
    expect(r.type).toBe("error");
    expect(r.error.message).not.toMatch(/near ","/);
  });

  // Promise: errors are SQLite's, for the statement as sent. workerd appends
  // SQLite's error offset, which is an offset into the rewritten text (the
  // guard CTE in front, parameters renumbered): `nosuch` is at offset 7 of
  // what the client sent, the error says "at offset 50" (a RETURNING item:
  // "at offset 80" for one at 37). The platform's SQLite says 7 and 37.
  it("an error's offset points into the SQL as sent", async () => {
    const c = freshCluster("atk-offset");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const sel = await one(c, "SELECT nosuch FROM t");
    expect(sel.type).toBe("error");
    const ret = await one(c, "DELETE FROM t WHERE id = 2 RETURNING nosuch");
    expect(ret.type).toBe("error");
    const raw = await rawSql(
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      "SELECT nosuch FROM t",
      "DELETE FROM t WHERE id = 2 RETURNING nosuch",
    );
    expect(raw.slice(1).map((m) => /at offset (\d+)/.exec(String(m))?.[1])).toEqual(["7", "37"]);
    const offsets = [sel, ret].map((r) => /at offset (\d+)/.exec(r.error.message)?.[1] ?? null);
    expect(offsets).toEqual(["7", "37"]);
  });
});

describe("connection counters (core/connection-counters.ts)", () => {
  // Promise (docs/api.md "Connection state"): each stream is a connection of
  // its own, as in sqld, and the counters move "as SQLite's would". In SQLite
  // (and sqld) RETURNING runs after each row is written, so
  // last_insert_rowid() there is the rowid of the row just inserted: 1, 2.
  // Here every call is replaced before the statement by the stream's value
  // from before it, so every row reads 0.
  it("last_insert_rowid() in RETURNING reads each row's own rowid, as in SQLite", async () => {
    const c = freshCluster("atk-ret-rowid");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    // The platform's own SQLite, on a fresh connection's worth of state: 1, 2.
    const [, raw] = await rawSql(
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      "INSERT INTO t (v) VALUES ('a'), ('b') RETURNING id, last_insert_rowid()",
    );
    expect(raw).toEqual([
      [1, 1],
      [2, 2],
    ]);
    const r = await one(
      c,
      "INSERT INTO t (v) VALUES ('a'), ('b') RETURNING id, last_insert_rowid()",
    );
    // Today: [["1","0"],["2","0"]]
    expect(values(r)).toEqual([
      ["1", "1"],
      ["2", "2"],
    ]);
  });

  // Promise: counters move "as SQLite's would". SQLite sets changes() to 0 when
  // a statement fails (sqlite3VdbeHalt: a statement rollback sets the change
  // count to 0); sqlite3 3.40: INSERT of 2 rows, a failing INSERT, then
  // `SELECT changes()` gives 0. Here "a failed one leaves them": it gives 2.
  // Same in a batch (a step conditioned on an earlier step's error reads the
  // stale count).
  it("changes() after a failed statement is 0, as in SQLite", async () => {
    const c = freshCluster("atk-changes-fail");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v UNIQUE)");
    const raw = await rawSql(
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v UNIQUE)",
      "INSERT INTO t (v) VALUES (1), (2)",
      "INSERT INTO t (v) VALUES (3), (1)",
      "SELECT changes()",
    );
    expect(raw[2]).toMatch(/UNIQUE constraint failed/);
    expect(raw[3]).toEqual([[0]]);
    const r = await pipeline(c, [
      execute("INSERT INTO t (v) VALUES (1), (2)"),
      execute("INSERT INTO t (v) VALUES (3), (1)"),
      execute("SELECT changes(), total_changes()"),
      close,
    ]);
    expect(r.body.results[1].type).toBe("error");
    // Today: [["2","2"]]
    expect(values(r.body.results[2])).toEqual([["0", "2"]]);
  });
});

describe("result names as sent (originalNames, core/sql-params.ts)", () => {
  // Promise: result column names are those of the SQL as sent. The body holds
  // `SELECT (0), (0)` (changes() bound to the literal (0)); the second name
  // "(0)" covers no rewrite where it stands, so the search falls back to the
  // start of the body and takes the first, rewritten, "(0)": both columns are
  // named "changes()".
  it("SELECT changes(), (0) names its columns changes() and (0)", async () => {
    const c = freshCluster("atk-name-literal");
    const r = await one(c, "SELECT changes(), (0)");
    // Today: ["changes()","changes()"]
    expect(names(r)).toEqual(["changes()", "(0)"]);
  });

  // Promise: names as sent. An alias is SQLite's name as written; the alias
  // "?1" equals the rewritten text of :b (?1), which the search finds first,
  // so the column is renamed ":b".
  it('an alias "?1" stays "?1" when a named parameter is rewritten to ?1', async () => {
    const c = freshCluster("atk-name-alias");
    const r = await pipeline(c, [
      {
        type: "execute",
        stmt: {
          sql: 'SELECT :b AS "?1", :a',
          named_args: [
            { name: "a", value: { type: "text", value: "A" } },
            { name: "b", value: { type: "text", value: "B" } },
          ],
        },
      },
      close,
    ]);
    // Today: [":b",":a"]
    expect(names(r.body.results[0])).toEqual(["?1", ":a"]);
  });
});

describe("held", () => {
  it("RETURNING through an INSTEAD OF view, fts5, generated columns, UPDATE FROM and an upsert: as SQLite, replicas identical", async () => {
    const c = freshCluster("atk-held-ret");
    await setup(
      c,
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      "CREATE VIEW vw AS SELECT id, v FROM t",
      "CREATE TRIGGER vi INSTEAD OF INSERT ON vw BEGIN INSERT INTO t (v) VALUES (new.v); END",
      "CREATE VIRTUAL TABLE f USING fts5(a, b)",
      "CREATE TABLE g (a INTEGER PRIMARY KEY, b, c AS (b * 2), d AS (b || 'x') STORED)",
      "CREATE TABLE s (id INTEGER PRIMARY KEY, v)",
      "CREATE TABLE u (k PRIMARY KEY, n)",
      "INSERT INTO s VALUES (1, 'S')",
      "INSERT INTO u VALUES (1, 1)",
    );
    // sqlite3 gives (NULL, 'q') and changes() 0 for the view.
    const view = okResult(await one(c, "INSERT INTO vw (v) VALUES ('q') RETURNING *"));
    expect(view.rows).toEqual([[{ type: "null" }, { type: "text", value: "q" }]]);
    expect(view.affected_row_count).toBe(0);
    // sqlite3 gives rowid -1 in an fts5 INSERT's RETURNING too.
    expect(
      values(await one(c, "INSERT INTO f (a, b) VALUES ('x', 'y') RETURNING *, rowid")),
    ).toEqual([["x", "y", "-1"]]);
    expect(values(await one(c, "INSERT INTO g (b) VALUES (21) RETURNING *"))).toEqual([
      ["1", "21", "42", "21x"],
    ]);
    expect(
      values(
        await one(c, "UPDATE t SET v = s.v FROM s WHERE s.id = t.id RETURNING *, v COLLATE nocase"),
      ),
    ).toEqual([["1", "S", "S"]]);
    const upsert = await one(
      c,
      "INSERT INTO u VALUES (1, ?) ON CONFLICT (k) DO UPDATE SET n = n + excluded.n RETURNING *, n * 2, ?1",
      [int("9007199254740993")],
    );
    expect(values(upsert)).toEqual([
      ["1", "9007199254740994", "18014398509481988", "9007199254740993"],
    ]);
    await sameOnEveryNode(c, "SELECT * FROM t UNION ALL SELECT k, n FROM u ORDER BY 1, 2");
  });

  it("a stream's counters follow it to a replica, across a sequence, and through an interactive transaction's replay", async () => {
    const c = freshCluster("atk-held-counters");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    let r = await pipeline(c, [execute("INSERT INTO t (v) VALUES (1)")]);
    r = await pipeline(
      c,
      [execute("SELECT last_insert_rowid(), changes(), total_changes()")],
      r.body.baton,
    );
    expect(r.headers.get("x-served-by")).toMatch(/^replica-/);
    expect(values(r.body.results[0])).toEqual([["1", "1", "1"]]);
    r = await pipeline(
      c,
      [
        {
          type: "sequence",
          sql: "INSERT INTO t (v) VALUES (2); INSERT INTO t (v) VALUES (3), (4);",
        },
        execute("SELECT last_insert_rowid(), changes(), total_changes()"),
      ],
      r.body.baton,
    );
    expect(values(r.body.results[1])).toEqual([["4", "2", "4"]]);
    r = await pipeline(
      c,
      [execute("BEGIN"), execute("INSERT INTO t (v) VALUES (5)")],
      r.body.baton,
    );
    r = await pipeline(
      c,
      [execute("SELECT last_insert_rowid(), changes(), total_changes()")],
      r.body.baton,
    );
    expect(values(r.body.results[0])).toEqual([["5", "1", "5"]]);
    r = await pipeline(
      c,
      [execute("COMMIT"), execute("SELECT total_changes()"), close],
      r.body.baton,
    );
    expect(r.body.results[0].type).toBe("ok");
    expect(values(r.body.results[1])).toEqual([["5"]]);
    await sameOnEveryNode(c, "SELECT * FROM t ORDER BY id");
  });

  it("counters read from stored SQL in a write replayed as a statement are refused, replicas identical", async () => {
    const c = freshCluster("atk-held-stored");
    await setup(
      c,
      "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
      "CREATE VIRTUAL TABLE f USING fts5(a, b)",
      "CREATE VIEW vl AS SELECT last_insert_rowid() AS r, changes() AS c",
      "CREATE TRIGGER tf AFTER INSERT ON t BEGIN INSERT INTO f (a, b) VALUES (last_insert_rowid(), changes()); END",
    );
    const viaView = await one(c, "INSERT INTO f (a, b) SELECT r, c FROM vl");
    expect(viaView.error?.code).toBe("NON_DETERMINISTIC");
    const viaTrigger = await one(c, "INSERT INTO t (v) VALUES (1), (2)");
    expect(viaTrigger.error?.code).toBe("NON_DETERMINISTIC");
    const v = await verify(c);
    expect(v.body.agree).toBe(true);
  });

  it("names of parameters, literals that hold ?1, and columns named ?1 are as sent", async () => {
    const c = freshCluster("atk-held-names");
    await setup(c, 'CREATE TABLE q ("?1" INT, "?" INT)', "INSERT INTO q VALUES (7, 8)");
    expect(names(await one(c, 'SELECT "?1", ? FROM q', [int(1)]))).toEqual(["?1", "?"]);
    expect(names(await one(c, "SELECT '?1', ?, '?'", [int(1)]))).toEqual(["'?1'", "?", "'?'"]);
    expect(names(await one(c, "SELECT ?2, ?1, ?2", [int(1), int(2)]))).toEqual(["?2", "?1", "?2"]);
    expect(
      names(await one(c, "SELECT ?1 || 'CAST(?1 AS INTEGER)', CAST(?1 AS INTEGER)", [int(5)])),
    ).toEqual(["?1 || 'CAST(?1 AS INTEGER)'", "CAST(?1 AS INTEGER)"]);
  });

  it("a float -0.0 argument binds and comes back as -0.0; NUL inside text survives", async () => {
    const c = freshCluster("atk-held-values");
    await setup(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const r = await pipelineRaw(
      c,
      '{"requests":[{"type":"execute","stmt":{"sql":"SELECT ?, atan2(?1, -1.0) < 0","args":[{"type":"float","value":-0.0}]}},' +
        '{"type":"execute","stmt":{"sql":"INSERT INTO t (v) VALUES (?) RETURNING v, hex(v)","args":[{"type":"text","value":"a\\u0000b"}]}},{"type":"close"}]}',
    );
    const [zero, neg] = okResult(r.body.results[0]).rows[0];
    expect(Object.is(zero.value, -0)).toBe(true);
    expect(neg).toEqual(int(1));
    expect(values(r.body.results[1])).toEqual([["a\u0000b", "610062"]]);
  });

  it("malformed ids and conditions are 400 PROTO_ERROR, never a 5xx", async () => {
    const c = freshCluster("atk-held-bad");
    for (const requests of [
      [{ type: "execute", stmt: { sql_id: 1e300 } }],
      [{ type: "store_sql", sql_id: 2 ** 53 + 2, sql: "SELECT 1" }],
      [
        {
          type: "batch",
          batch: {
            steps: [
              { stmt: stmt("SELECT 1") },
              { stmt: stmt("SELECT 1"), condition: { type: "ok", step: -1 } },
            ],
          },
        },
      ],
      [{ type: "execute", stmt: { sql: "SELECT 1", want_rows: "no" } }],
    ]) {
      const r = await pipeline(c, [...requests, close]);
      expect(r.status, JSON.stringify(requests)).toBe(400);
      expect(r.body.code).toBe("PROTO_ERROR");
    }
  });
});
