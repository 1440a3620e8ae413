/**
 * Export and import through the front door, against real clusters: a
 * database of odd schemas and odd values exported, imported into an empty
 * cluster, and found identical there (verify's checksums of every exact row
 * image, the schema, sqlite_sequence and fts5 settings); a dump taken while
 * writes go on, identical to the source at the dump's LSN; the snapshot
 * released when the dump ends and when its client walks away. The refusals
 * are in test/backup-refusals.test.ts, the pure parts in test/sql-dump.test.ts.
 */
import { describe, expect, it } from "vitest";
import {
  agreedChecksums,
  exportDump,
  exportResponse,
  imported,
  rows,
  sameState,
  shadowTables,
} from "./backup-helpers";
import { exec, freshCluster, waitUntil } from "./helpers";

const WIDE_COLUMNS = Array.from({ length: 100 }, (_, i) => `c${i + 1}`);

/** Every construct the brief names, each with rows that make it matter. */
const ODD_SCHEMA = [
  `CREATE TABLE "odd ""name"" here" ("a b" TEXT, "it's" INTEGER, rowid TEXT)`,
  `INSERT INTO "odd ""name"" here" VALUES ('x y', 1, 'not the rowid'), ('', -1, NULL)`,
  `DELETE FROM "odd ""name"" here" WHERE "it's" = 1`,
  `INSERT INTO "odd ""name"" here" VALUES ('z', 2, 'r')`,
  "CREATE TABLE w (k TEXT PRIMARY KEY, n INTEGER, r REAL, b BLOB, a ANY) STRICT, WITHOUT ROWID",
  "INSERT INTO w VALUES ('b', 9223372036854775807, 2.0, X'00', -0.0), ('a', -9223372036854775808, -1.5e-7, X'', 'text')",
  "CREATE TABLE g (a INTEGER, b INTEGER GENERATED ALWAYS AS (a * 2) VIRTUAL, c TEXT GENERATED ALWAYS AS ('x' || a) STORED)",
  "INSERT INTO g (a) VALUES (1), (NULL), (21)",
  "CREATE TABLE ai (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)",
  "INSERT INTO ai (v) VALUES ('1'), ('2'), ('3'), ('4'), ('5'), ('6'), ('7'), ('8'), ('9'), ('10')",
  "DELETE FROM ai WHERE id > 7",
  // The child is created first: the dump must still load the parent's rows before its.
  "CREATE TABLE child (id INTEGER PRIMARY KEY, p INTEGER REFERENCES parent(id) ON DELETE CASCADE)",
  "CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT)",
  "INSERT INTO parent VALUES (2, 'Two'), (1, 'One')",
  "INSERT INTO child VALUES (10, 2), (11, 1), (12, 2)",
  "DELETE FROM parent WHERE id = 1",
  // A parent key that only a UNIQUE index makes unique.
  "CREATE TABLE code_ref (code TEXT REFERENCES codes(code))",
  "CREATE TABLE codes (code TEXT)",
  "CREATE UNIQUE INDEX codes_code ON codes(code)",
  "INSERT INTO codes VALUES ('A'), ('B')",
  "INSERT INTO code_ref VALUES ('B'), ('A')",
  "CREATE TABLE tree (id INTEGER PRIMARY KEY, up INTEGER REFERENCES tree(id))",
  "INSERT INTO tree VALUES (1, NULL), (2, 1), (3, 2)",
  "CREATE TABLE log (what TEXT)",
  "CREATE VIEW named AS SELECT p.name, c.id FROM parent p JOIN child c ON c.p = p.id",
  "CREATE TRIGGER noted AFTER INSERT ON parent WHEN NEW.name <> '' BEGIN INSERT INTO log VALUES (CASE WHEN NEW.id > 1 THEN 'big; ' || NEW.name ELSE 'small' END); END",
  "INSERT INTO parent VALUES (3, 'Three')",
  "CREATE INDEX partial ON w (n) WHERE n > 0",
  "CREATE INDEX expr ON parent (lower(name))",
  "CREATE VIRTUAL TABLE ft USING fts5(title, body)",
  "INSERT INTO ft (ft, rank) VALUES ('pgsz', 8000)",
  "INSERT INTO ft (ft, rank) VALUES ('rank', 'bm25(10.0, 1.0)')",
  "INSERT INTO ft (title, body) VALUES ('one', 'the quick fox'), ('two', 'lazy dog'), ('three', 'quick quick')",
  "DELETE FROM ft WHERE title = 'two'",
  "CREATE TABLE empty (x)",
  `CREATE TABLE wide (${WIDE_COLUMNS.join(", ")})`,
  `INSERT INTO wide VALUES (${WIDE_COLUMNS.map((_, i) => (i % 10 === 0 ? `'${"long ".repeat(i + 1)}'` : String(i))).join(", ")})`,
  "CREATE TABLE big (id INTEGER PRIMARY KEY, data BLOB)",
  "INSERT INTO big VALUES (1, randomblob(1048576))",
  "CREATE TABLE vals (v)",
  "INSERT INTO vals VALUES (NULL), (0), (9223372036854775807), (-9223372036854775808), (9007199254740993), " +
    "(2.0), (-0.0), (0.1), (1e308 * 10), (-1e308 * 10), (5e-324), (1.7976931348623157e308), (1.0e21), " +
    "(''), ('it''s'), ('é🎉'), (CAST(X'FF00FE41' AS TEXT)), ('a' || char(9) || 'b' || char(10)), (X''), (X'00FF')",
];

async function oddCluster(prefix: string): Promise<string> {
  const cluster = freshCluster(prefix);
  const res = await exec(
    cluster,
    ODD_SCHEMA.map((sql) => ({ sql })),
  );
  expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
  return cluster;
}

describe("export, then import into an empty cluster", () => {
  it("gives back every object and every exact value, and the restored cluster works", async () => {
    const a = await oddCluster("backup-a");
    const before = await agreedChecksums(a);
    const dump = await exportDump(a);
    expect(dump.status).toBe(200);
    expect(dump.headers.get("content-type")).toBe("application/sql; charset=utf-8");
    const lsn = Number(dump.headers.get("x-snapshot-lsn"));
    expect(lsn).toBe(before.appliedLsn);
    expect(Number(dump.headers.get("x-export-rows"))).toBe(
      Object.values(before.tables).reduce((n, t) => n + t.rows, 0),
    );
    const text = dump.text;
    expect(
      text.startsWith(`-- dosqlite-cluster export of cluster '${a}'\n-- snapshot-lsn: ${lsn}\n`),
    ).toBe(true);
    expect(text).toContain("PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\n");
    expect(text.endsWith("COMMIT;\n")).toBe(true);
    // Nothing internal: no capture trigger, no trigger guard, no shadow table.
    expect(text).not.toMatch(/_repl_|_cf_|ft_data|ft_config/);
    // Rowids preserved; a column named rowid leaves the rowid to oid; generated columns left to SQLite.
    expect(text).toContain(
      `INSERT INTO "odd ""name"" here"(oid,"a b","it's","rowid") VALUES(3,'z',2,'r');`,
    );
    expect(text).toContain(`INSERT INTO "g"(rowid,"a") VALUES(2,NULL);`);
    expect(text).toContain(
      `INSERT INTO "w"("k","n","r","b","a") VALUES('b',9223372036854775807,2.0,X'00',-0.0);`,
    );
    expect(text).toContain(`INSERT INTO "vals"(rowid,"v") VALUES(4,-9223372036854775808);`);
    expect(text).toContain(`INSERT INTO "vals"(rowid,"v") VALUES(9,9.0e+999);`);
    expect(text).toContain(`INSERT INTO "vals"(rowid,"v") VALUES(17,CAST(X'FF00FE41' AS TEXT));`);
    expect(text).toContain(`INSERT INTO "vals"(rowid,"v") VALUES(18,CAST(X'6109620A' AS TEXT));`);
    expect(text).toContain(`INSERT INTO "vals"(rowid,"v") VALUES(16,'é🎉');`);
    expect(text).toContain(
      "DELETE FROM sqlite_sequence;\nINSERT INTO sqlite_sequence VALUES('ai',10);\n",
    );
    // Parents before children; a parent key's UNIQUE index before the child's rows; the rest after every row.
    expect(text.indexOf("CREATE TABLE parent")).toBeLessThan(text.indexOf(`INSERT INTO "child"`));
    expect(text).toContain(
      "CREATE TABLE codes (code TEXT);\nCREATE UNIQUE INDEX codes_code ON codes(code);\n",
    );
    expect(text.indexOf("CREATE UNIQUE INDEX codes_code")).toBeLessThan(
      text.indexOf(`INSERT INTO "code_ref"`),
    );
    const lastRow = text.lastIndexOf("\nINSERT INTO sqlite_sequence");
    for (const later of [
      "CREATE INDEX partial",
      "CREATE INDEX expr",
      "CREATE VIEW named",
      "CREATE TRIGGER noted",
    ]) {
      expect(text.indexOf(later), later).toBeGreaterThan(lastRow);
    }
    expect(text).toContain(
      "CREATE TRIGGER noted AFTER INSERT ON parent WHEN NEW.name <> '' BEGIN INSERT INTO log VALUES",
    );
    // fts5: created as a virtual table, its settings before its rows.
    expect(text).toContain(
      `CREATE VIRTUAL TABLE ft USING fts5(title, body);\nINSERT INTO "ft"("ft",rank) VALUES('pgsz',8000);\nINSERT INTO "ft"("ft",rank) VALUES('rank','bm25(10.0, 1.0)');\nINSERT INTO "ft"(rowid,"title","body") VALUES(1,`,
    );
    expect(text).toContain(
      `INSERT INTO "ft"(rowid,"title","body") VALUES(3,'three','quick quick');`,
    );

    const b = freshCluster("backup-b");
    const answer = await imported(b, text);
    expect(answer).toMatchObject({ skipped: 3 });
    expect(answer.lsn).toBeTypeOf("number");
    sameState(before, await agreedChecksums(b));
    const values = "SELECT rowid, v, typeof(v), quote(v), hex(v) FROM vals ORDER BY rowid";
    expect(await rows(b, values)).toEqual(await rows(a, values));
    expect(await rows(b, "SELECT seq FROM sqlite_sequence WHERE name = 'ai'")).toEqual([[10]]);

    // The restored cluster behaves as the source does: triggers fire, cascades run, counters go on.
    const res = await exec(b, [
      { sql: "INSERT INTO parent VALUES (4, 'Four')" },
      { sql: "DELETE FROM parent WHERE id = 2" },
      { sql: "INSERT INTO ai (v) VALUES ('next')" },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await rows(b, "SELECT what FROM log ORDER BY rowid")).toEqual([
      ["big; Three"],
      ["big; Four"],
    ]);
    expect(await rows(b, "SELECT id FROM child")).toEqual([]);
    expect(await rows(b, "SELECT id FROM ai WHERE v = 'next'")).toEqual([[11]]);
    expect(await rows(b, "SELECT title FROM ft WHERE ft MATCH 'quick' ORDER BY rank")).toEqual([
      ["three"],
      ["one"],
    ]);
    await agreedChecksums(b);
    expect(await shadowTables(a)).toBe(0);
  });
});

describe("a dump taken while writes go on", () => {
  it("restores into a cluster identical to the source at the dump's LSN", async () => {
    const a = freshCluster("backup-busy");
    const seed = await exec(a, [
      { sql: "CREATE TABLE counter (n INTEGER)" },
      { sql: "INSERT INTO counter VALUES (0)" },
      { sql: "CREATE TABLE w (writer INTEGER, i INTEGER, pad TEXT, PRIMARY KEY (writer, i))" },
      {
        sql: "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 6000) INSERT INTO w SELECT -1, i, printf('%.100c', 'p') FROM s",
      },
    ]);
    expect(seed.status).toBe(200);
    const writes: { writer: number; i: number; lsn: number }[] = [];
    let stop = false;
    const writer = async (id: number) => {
      for (let i = 0; !stop; i++) {
        const res = await exec(a, [
          { sql: "INSERT INTO w VALUES (?, ?, 'x')", params: [id, i] },
          { sql: "UPDATE counter SET n = n + 1" },
        ]);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        writes.push({ writer: id, i, lsn: res.body.lsn as number });
      }
    };
    const writers = [1, 2, 3].map(writer);
    await waitUntil("writes before the export", async () => writes.length >= 6);
    const response = await exportResponse(a);
    const lsn = Number(response.headers.get("x-snapshot-lsn"));
    // The snapshot is taken: writes go on while the dump streams.
    const seen = writes.length;
    await waitUntil("writes after the snapshot", async () => writes.length >= seen + 6);
    const text = new TextDecoder().decode(await response.arrayBuffer());
    stop = true;
    await Promise.all(writers);
    expect(writes.some((w) => w.lsn <= lsn)).toBe(true);
    expect(writes.some((w) => w.lsn > lsn)).toBe(true);

    const b = freshCluster("backup-busy-b");
    await imported(b, text);
    const atLsn = writes.filter((w) => w.lsn <= lsn);
    expect(await rows(b, "SELECT n FROM counter")).toEqual([[atLsn.length]]);
    const restored = await rows(b, "SELECT writer, i FROM w WHERE writer > 0 ORDER BY writer, i");
    const expected = atLsn
      .map((w) => [w.writer, w.i])
      .sort((x, y) => (x[0] ?? 0) - (y[0] ?? 0) || (x[1] ?? 0) - (y[1] ?? 0));
    expect(restored).toEqual(expected);
    expect(await rows(b, "SELECT count(*) FROM w WHERE writer = -1")).toEqual([[6000]]);
    await agreedChecksums(b);
  });
});

describe("the snapshot an export reads", () => {
  it("is released when the dump ends, when its client walks away, and is shared meanwhile", async () => {
    const a = freshCluster("backup-release");
    const seed = await exec(a, [
      { sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, pad TEXT)" },
      {
        sql: "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 9000) INSERT INTO t SELECT i, printf('%.200c', 'p') FROM s",
      },
    ]);
    expect(seed.status).toBe(200);
    const first = await exportResponse(a);
    const reader = first.body?.getReader();
    const piece = await reader?.read();
    expect(new TextDecoder().decode(piece?.value)).toMatch(/^-- dosqlite-cluster export/);
    expect(await shadowTables(a)).toBe(1);
    // Another export meanwhile reads the same snapshot: the same LSN, though a write came between.
    expect((await exec(a, [{ sql: "INSERT INTO t VALUES (0, 'later')" }])).status).toBe(200);
    const second = await exportDump(a);
    expect(second.headers.get("x-snapshot-lsn")).toBe(first.headers.get("x-snapshot-lsn"));
    expect(second.text).not.toContain("'later'");
    expect(await shadowTables(a)).toBe(1);
    // The first client walks away mid-dump: the snapshot goes.
    await reader?.cancel();
    await waitUntil("the snapshot released", async () => (await shadowTables(a)) === 0, 10_000);
    const third = await exportDump(a);
    expect(third.text).toContain("'later'");
    expect(Number(third.headers.get("x-snapshot-lsn"))).toBeGreaterThan(
      Number(first.headers.get("x-snapshot-lsn")),
    );
    expect(await shadowTables(a)).toBe(0);
  });
});
