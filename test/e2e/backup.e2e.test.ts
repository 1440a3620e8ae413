/**
 * Export and import against `wrangler dev`, over real HTTP: a database holding
 * every kind of value is exported and loaded into a fresh SQLite (node:sqlite,
 * and the sqlite3 CLI when one is installed), where every row's every value is
 * what the cluster holds (its storage class, an INTEGER's exact decimal, a
 * REAL's quote() and sign, the bytes of TEXT and BLOB); and a dump taken while
 * clients write restores into a new cluster that is the source exactly as it
 * was at the dump's LSN.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, startDevServer } from "./dev-server";

const ADMIN = "dev-admin-token";
let server: DevServer;

beforeAll(async () => {
  server = await startDevServer();
});

afterAll(async () => {
  await server?.stop();
});

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are inspected freely
async function api(method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = await response.json();
  expect(response.status, JSON.stringify(json).slice(0, 500)).toBe(200);
  return json;
}

const exec = (cluster: string, statements: { sql: string; params?: unknown[] }[]) =>
  api("POST", `/v1/clusters/${cluster}/exec`, { statements });

async function query(cluster: string, sql: string): Promise<unknown[][]> {
  const body = await api("POST", `/v1/clusters/${cluster}/query`, { sql, format: "arrays" });
  return body.rows;
}

async function importText(cluster: string, dump: string): Promise<void> {
  const response = await fetch(`${server.url}/admin/clusters/${cluster}/import`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/sql" },
    body: dump,
  });
  expect(response.status, (await response.clone().text()).slice(0, 500)).toBe(200);
  const verify = await api("POST", `/admin/clusters/${cluster}/verify`);
  expect(verify.mismatches).toEqual([]);
}

/** One value as text that tells every value apart: storage class, then its exact content. */
const describe1 = (x: string) =>
  `typeof(${x}) || ':' || CASE typeof(${x}) WHEN 'integer' THEN CAST(${x} AS TEXT) ` +
  `WHEN 'real' THEN CASE WHEN ${x} = 0 AND atan2(${x}, -1.0) < 0 THEN '-0.0' ELSE quote(${x}) END ` +
  `WHEN 'text' THEN hex(${x}) WHEN 'blob' THEN hex(${x}) ELSE '' END`;

/**
 * quote() spells a REAL as its SQLite version does (workerd's and node:sqlite's
 * differ: 0.33333333333333332 against 3.333333333333333148e-01, 9.0e+999 against
 * the sqlite3 CLI's Inf), each spelling
 * reading back to the same double: compared as that double, sign of zero kept.
 */
function sameSpelling(row: unknown[]): unknown[] {
  return row.map((value) => {
    if (typeof value === "bigint") return Number(value);
    if (typeof value !== "string" || !value.startsWith("real:") || value === "real:-0.0")
      return value;
    // sqlite3 3.40 spells the infinities Inf and -Inf.
    const text = value.slice(5).replace(/^(-?)Inf$/, "$1Infinity");
    return `real:${String(Number.parseFloat(text))}`;
  });
}

/** Each table, and the SQL describing every value of every row, in key order. */
const TABLES: Record<string, string> = {
  vals: `SELECT id, ${describe1("v")}, ${describe1("r")} FROM vals ORDER BY id`,
  strict: `SELECT ${describe1("k")}, ${describe1("i")}, ${describe1("f")}, ${describe1("b")} FROM strict ORDER BY k`,
  gen: `SELECT rowid, ${describe1("a")}, ${describe1("twice")}, ${describe1("label")} FROM gen ORDER BY rowid`,
  seq: "SELECT id, v FROM seq ORDER BY id",
  sqlite_sequence: "SELECT name, CAST(seq AS TEXT) FROM sqlite_sequence ORDER BY name",
  fts: "SELECT rowid, body FROM fts WHERE fts MATCH 'quick' ORDER BY rowid",
};

const VALUES = [
  "NULL",
  "0",
  "-1",
  "9223372036854775807",
  "-9223372036854775808",
  "9007199254740993",
  "-9007199254740993",
  "2.0",
  "-0.0",
  "0.1",
  "1.0 / 3",
  "1e308 * 10",
  "-1e308 * 10",
  "5e-324",
  "1.7976931348623157e308",
  "1.0e21",
  "-123456.789e-300",
  "''",
  "'plain ascii'",
  "'it''s'",
  "'é ü 🎉 中文'",
  "'line' || char(10) || 'break' || char(13) || char(9)",
  "CAST(X'FF' AS TEXT)",
  "CAST(X'610062' AS TEXT)",
  "CAST(X'C328' AS TEXT)",
  "X''",
  "X'00'",
  "X'DEADBEEF00FF'",
  "randomblob(1000)",
  "randomblob(1048576)",
];

describe("an export of every value kind", () => {
  it("loads into a fresh SQLite, every row's every value exactly the cluster's", async () => {
    const cluster = `backup-e2e-${Date.now()}`;
    await exec(cluster, [
      { sql: "CREATE TABLE vals (id INTEGER PRIMARY KEY, v, r REAL)" },
      ...VALUES.map((value, i) => ({
        sql: `INSERT INTO vals VALUES (${i + 1}, ${value}, ${i % 3 === 0 ? "-0.0" : i % 3 === 1 ? "2" : "0.5"})`,
      })),
      {
        sql: "CREATE TABLE strict (k TEXT PRIMARY KEY, i INTEGER, f REAL, b BLOB) STRICT, WITHOUT ROWID",
      },
      {
        sql: "INSERT INTO strict VALUES ('a', 9223372036854775807, -0.0, X'01'), ('b', NULL, 1e308 * 10, NULL), ('c', -1, 2.5, X'')",
      },
      {
        sql: "CREATE TABLE gen (a INTEGER, twice INTEGER GENERATED ALWAYS AS (a * 2) VIRTUAL, label TEXT GENERATED ALWAYS AS ('n' || a) STORED)",
      },
      { sql: "INSERT INTO gen (a) VALUES (1), (NULL), (-9223372036854775808)" },
      { sql: "CREATE TABLE seq (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)" },
      { sql: "INSERT INTO seq (v) VALUES ('a'), ('b'), ('c'), ('d')" },
      { sql: "DELETE FROM seq WHERE id >= 3" },
      { sql: "CREATE VIRTUAL TABLE fts USING fts5(body)" },
      {
        sql: "INSERT INTO fts (rowid, body) VALUES (5, 'the quick fox'), (9, 'slow'), (12, 'quick quick')",
      },
    ]);
    const response = await fetch(`${server.url}/admin/clusters/${cluster}/export`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(response.status).toBe(200);
    const dump = await response.text();
    expect(dump).toContain(`-- snapshot-lsn: ${response.headers.get("x-snapshot-lsn")}\n`);
    const db = new DatabaseSync(":memory:");
    db.exec(dump);
    for (const [table, sql] of Object.entries(TABLES)) {
      const cluster_ = (await query(cluster, sql)).map(sameSpelling);
      const local = db
        .prepare(sql)
        .all()
        .map((row) => sameSpelling(Object.values(row as Record<string, unknown>)));
      expect(cluster_.length, table).toBeGreaterThan(0);
      expect(local, table).toEqual(cluster_);
    }
    db.close();
    // The sqlite3 CLI, when installed, loads the very same file: `sqlite3 new.db < dump.sql`.
    if (spawnSync("sqlite3", ["-version"]).status === 0) {
      const dir = mkdtempSync(join(tmpdir(), "dosql-dump-"));
      try {
        writeFileSync(join(dir, "dump.sql"), dump);
        const load = spawnSync("sh", [
          "-c",
          `sqlite3 ${join(dir, "new.db")} < ${join(dir, "dump.sql")}`,
        ]);
        expect(load.stderr.toString()).toBe("");
        const read = spawnSync("sqlite3", ["-json", join(dir, "new.db"), TABLES.vals ?? ""], {
          maxBuffer: 64 * 1024 * 1024,
        });
        const fromCli = (JSON.parse(read.stdout.toString()) as Record<string, unknown>[]).map((r) =>
          sameSpelling(Object.values(r)),
        );
        expect(fromCli).toEqual((await query(cluster, TABLES.vals ?? "")).map(sameSpelling));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });
});

describe("a dump taken while clients write", () => {
  it("restores into a new cluster identical to the source at the dump's LSN", async () => {
    const a = `backup-busy-e2e-${Date.now()}`;
    await exec(a, [
      { sql: "CREATE TABLE counter (n INTEGER)" },
      { sql: "INSERT INTO counter VALUES (0)" },
      {
        sql: "CREATE TABLE w (writer INTEGER, i INTEGER, pad TEXT, PRIMARY KEY (writer, i)) WITHOUT ROWID",
      },
      {
        sql: "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 20000) INSERT INTO w SELECT -1, i, printf('%.200c', 'p') FROM s",
      },
    ]);
    const writes: { writer: number; i: number; lsn: number }[] = [];
    let stop = false;
    const writer = async (id: number) => {
      for (let i = 0; !stop; i++) {
        const body = await exec(a, [
          { sql: "INSERT INTO w VALUES (?, ?, 'x')", params: [id, i] },
          { sql: "UPDATE counter SET n = n + 1" },
        ]);
        writes.push({ writer: id, i, lsn: body.lsn });
      }
    };
    const writers = [1, 2, 3, 4].map(writer);
    while (writes.length < 10) await new Promise((r) => setTimeout(r, 20));
    const response = await fetch(`${server.url}/admin/clusters/${a}/export?progress=1`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(response.status).toBe(200);
    const lsn = Number(response.headers.get("x-snapshot-lsn"));
    const seen = writes.length;
    while (writes.length < seen + 10) await new Promise((r) => setTimeout(r, 20));
    const dump = await response.text();
    stop = true;
    await Promise.all(writers);
    const total = response.headers.get("x-export-rows");
    expect(dump).toContain(`\n-- progress: ${total} of ${total} rows\n`);
    expect(writes.filter((w) => w.lsn <= lsn).length).toBeGreaterThan(0);
    expect(writes.filter((w) => w.lsn > lsn).length).toBeGreaterThan(0);

    const b = `${a}-restored`;
    await importText(b, dump);
    const atLsn = writes.filter((w) => w.lsn <= lsn);
    expect(await query(b, "SELECT n FROM counter")).toEqual([[atLsn.length]]);
    const expected = atLsn
      .map((w) => [w.writer, w.i])
      .sort((x, y) => (x[0] ?? 0) - (y[0] ?? 0) || (x[1] ?? 0) - (y[1] ?? 0));
    expect(await query(b, "SELECT writer, i FROM w WHERE writer > 0 ORDER BY writer, i")).toEqual(
      expected,
    );
    expect(await query(b, "SELECT count(*), min(i), max(i) FROM w WHERE writer = -1")).toEqual([
      [20000, 1, 20000],
    ]);
  });
});

describe("a sqlite3 .dump whose rows come before their parent rows", () => {
  // sqlite3 writes each table's CREATE just before its rows, in rowid order, with foreign
  // keys off: a table that names itself, and two tables that name each other, then hold
  // rows whose parent row (or parent table) is still to come.
  it.skipIf(spawnSync("sqlite3", ["-version"]).status !== 0)(
    "loads into a cluster as sqlite3 loads it",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "fk-dump-"));
      try {
        const db = join(dir, "src.db");
        const build = [
          "PRAGMA foreign_keys = OFF;",
          "CREATE TABLE node (id INTEGER PRIMARY KEY, up INTEGER REFERENCES node (id), name TEXT);",
          "INSERT INTO node VALUES (1, 40, 'leaf'), (2, 1, 'leaf of leaf'), (40, NULL, 'root');",
          "CREATE TABLE a (id INTEGER PRIMARY KEY, b INTEGER REFERENCES b (id));",
          "CREATE TABLE b (id INTEGER PRIMARY KEY, a INTEGER NOT NULL REFERENCES a (id));",
          "INSERT INTO a VALUES (1, 7), (2, NULL);",
          "INSERT INTO b VALUES (7, 1), (8, 2);",
          "CREATE TABLE log (x);",
          "CREATE TRIGGER node_in AFTER INSERT ON node BEGIN INSERT INTO log VALUES (new.id); END;",
        ].join("\n");
        expect(spawnSync("sqlite3", [db], { input: build }).status).toBe(0);
        const check = spawnSync("sqlite3", [db, "PRAGMA foreign_key_check"], { encoding: "utf8" });
        expect(check.stdout).toBe("");
        const dump = spawnSync("sqlite3", [db, ".dump"], { encoding: "utf8" }).stdout;
        expect(dump.indexOf("VALUES(1,40,'leaf')")).toBeLessThan(dump.indexOf("VALUES(40,NULL"));
        const cluster = `fk-dump-e2e-${Date.now()}`;
        await importText(cluster, dump);
        for (const sql of [
          "SELECT id, up, name FROM node ORDER BY id",
          "SELECT id, b FROM a ORDER BY id",
          "SELECT id, a FROM b ORDER BY id",
          "SELECT count(*) FROM log",
        ]) {
          const cli = spawnSync("sqlite3", ["-json", db, sql], { encoding: "utf8" }).stdout;
          const expected = cli.trim() === "" ? [] : JSON.parse(cli).map(Object.values);
          expect(await query(cluster, sql), sql).toEqual(expected);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
