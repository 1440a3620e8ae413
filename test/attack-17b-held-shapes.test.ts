/**
 * Adversarial review 17b: rows held back for their parent rows
 * (core/held-rows.ts, master/import-items.ts) in tables of unusual shape.
 *
 * Promised (docs/operations.md "Import"): rows before their parent rows are
 * held back and go in once the parent is in; the state is what sqlite3 loads
 * from the dump (foreign keys off, in order), verify agrees, and the 200's
 * `rows` counts the rows loaded. Each test's expected rows are worked out by
 * hand from the dump (every row carries its key, so order does not matter).
 */
import { describe, expect, it } from "vitest";
import { agreedChecksums, DUMP_HEAD, exportDump, importDump, rows } from "./backup-helpers";
import { call, freshCluster } from "./helpers";

async function load(c: string, body: string, expectRows: number): Promise<void> {
  const res = await importDump(c, `${DUMP_HEAD}${body}COMMIT;\n`);
  expect(res.status, JSON.stringify(res.body).slice(0, 800)).toBe(200);
  expect(res.body.rows).toBe(expectRows);
  await agreedChecksums(c);
}

describe("rows held back in tables of unusual shape", () => {
  // Child rows into a quoted, dotted, unicode, space-and-quote name, whose
  // parent table (another odd name, REFERENCES written in other ASCII case)
  // is created after them.
  it("quoted odd names, parent table created later, REFERENCES in another case", async () => {
    const c = freshCluster("a17b-odd-names");
    await load(
      c,
      `CREATE TABLE "chi ld.""é"""(id INTEGER PRIMARY KEY, p INTEGER REFERENCES "PAR.ENT ""Ä"" x"(id));
INSERT INTO "main"."chi ld.""é"""("p","id") VALUES(7,1);
INSERT INTO "chi ld.""é""" VALUES(2,8);
CREATE TABLE "par.ent ""Ä"" x"(id INTEGER PRIMARY KEY, v);
INSERT INTO "par.ent ""Ä"" x" VALUES(7,'a');
INSERT INTO [par.ent "Ä" x] VALUES(8,'b');
`,
      4,
    );
    expect(await rows(c, 'SELECT id, p FROM "chi ld.""é""" ORDER BY id')).toEqual([
      [1, 7],
      [2, 8],
    ]);
  });

  it("a table named like a keyword, column list in another order", async () => {
    const c = freshCluster("a17b-keyword");
    await load(
      c,
      `CREATE TABLE "order"("select" INTEGER PRIMARY KEY, "from" INTEGER REFERENCES "ORDER"("select"), "where" TEXT);
INSERT INTO "order"("where","from","select") VALUES('a',3,1);
INSERT INTO [order]("from","select","where") VALUES(1,2,'b');
INSERT INTO \`order\` VALUES(3,NULL,'c');
`,
      3,
    );
    expect(await rows(c, 'SELECT "select", "from", "where" FROM "order" ORDER BY 1')).toEqual([
      [1, 3, "a"],
      [2, 1, "b"],
      [3, null, "c"],
    ]);
  });

  it("WITHOUT ROWID tables naming each other with composite keys", async () => {
    const c = freshCluster("a17b-composite");
    await load(
      c,
      `CREATE TABLE a(x TEXT, y INTEGER, bx TEXT, "by" INTEGER, PRIMARY KEY(x, y), FOREIGN KEY(bx, "by") REFERENCES B(x, y)) WITHOUT ROWID;
INSERT INTO a VALUES('k',1,'m',2);
INSERT INTO a VALUES('k',2,NULL,5);
CREATE TABLE b(x TEXT, y INTEGER, ax TEXT, ay INTEGER, PRIMARY KEY(x, y), FOREIGN KEY(ax, ay) REFERENCES A(x, y)) WITHOUT ROWID;
INSERT INTO b VALUES('m',2,'k',1);
`,
      3,
    );
    expect(await rows(c, "SELECT x, y, bx, by FROM a ORDER BY x, y")).toEqual([
      ["k", 1, "m", 2],
      ["k", 2, null, 5],
    ]);
  });

  it("STRICT table with a generated column, column list without it", async () => {
    const c = freshCluster("a17b-strict");
    await load(
      c,
      `CREATE TABLE t(id INTEGER PRIMARY KEY, p INTEGER REFERENCES t(id), v TEXT, g TEXT GENERATED ALWAYS AS (v || '!') STORED, h INT AS (id * 2)) STRICT;
INSERT INTO t(id,p,v) VALUES(1,3,'a');
INSERT INTO t(id,p,v) VALUES(2,1,'b');
INSERT INTO t(id,p,v) VALUES(3,NULL,'c');
`,
      3,
    );
    expect(await rows(c, "SELECT id, p, g, h FROM t ORDER BY id")).toEqual([
      [1, 3, "a!", 2],
      [2, 1, "b!", 4],
      [3, null, "c!", 6],
    ]);
  });

  // AUTOINCREMENT rows held, the dump's counter (past the largest rowid) after them.
  it("AUTOINCREMENT rows held, sqlite_sequence exact", async () => {
    const c = freshCluster("a17b-autoinc");
    await load(
      c,
      `CREATE TABLE t(id INTEGER PRIMARY KEY AUTOINCREMENT, p INTEGER REFERENCES t(id));
INSERT INTO t VALUES(5,9);
INSERT INTO t VALUES(6,5);
INSERT INTO t VALUES(9,NULL);
DELETE FROM sqlite_sequence;
INSERT INTO sqlite_sequence VALUES('t',40);
`,
      3,
    );
    const res = await call("POST", `/v1/clusters/${c}/exec`, {
      body: { statements: [{ sql: "INSERT INTO t(p) VALUES (NULL)" }] },
    });
    expect(res.status).toBe(200);
    expect(await rows(c, "SELECT max(id) FROM t")).toEqual([[41]]);
    await agreedChecksums(c);
  });

  // 100 columns (the most Durable Object SQLite allows): each row keeps its smallest value as the dump's literal.
  it("wide rows held back, values exact", async () => {
    const c = freshCluster("a17b-wide");
    const cols = Array.from({ length: 98 }, (_, i) => `c${i}`);
    const create = `CREATE TABLE w(id INTEGER PRIMARY KEY, p INTEGER REFERENCES w(id), ${cols.join(", ")});`;
    const specials = [
      "1e999",
      "-0",
      "9223372036854775807",
      "-9223372036854775808",
      "CAST(X'41FF' AS TEXT)",
      "X''",
      "''",
      "0.1",
      "NULL",
      "18446744073709551616",
    ];
    const values = (id: number, p: string) =>
      `(${id},${p},${cols.map((_, i) => specials[i % specials.length]).join(",")})`;
    await load(
      c,
      `${create}
INSERT INTO w VALUES${values(1, "3")};
INSERT INTO w VALUES${values(2, "1")},${values(3, "NULL")};
`,
      3,
    );
    const got = await rows(
      c,
      "SELECT id, p, typeof(c0), c0, c1, c2, c3, hex(c4), typeof(c4), hex(c5), c6, c7, c8, c9, typeof(c1) FROM w ORDER BY id",
    );
    const tail = (id: number, p: number | null) => [
      id,
      p,
      "real",
      { real: "Infinity" },
      0,
      { int: "9223372036854775807" },
      { int: "-9223372036854775808" },
      "41FF",
      "text",
      "",
      "",
      0.1,
      null,
      { real: 18446744073709552000 },
      "integer",
    ];
    expect(got).toEqual([tail(1, 3), tail(2, 1), tail(3, null)]);
  });

  // A list in reverse (every row names the next), interleaved with rows of o
  // so that each row is its own item: rows wait across three batches; counted once.
  it("a reversed list across three batches, counted once", async () => {
    const c = freshCluster("a17b-rev");
    const n = 1_200;
    const lines = [];
    for (let i = 1; i <= n; i++)
      lines.push(`INSERT INTO t VALUES(${i},${i === n ? "NULL" : i + 1});`);
    // Interleave a second table so every row is its own item (1,000 items a batch).
    const body = lines.map((l, i) => `${l}\nINSERT INTO o VALUES(${i});`).join("\n");
    await load(
      c,
      `CREATE TABLE t(id INTEGER PRIMARY KEY, p INTEGER REFERENCES t(id));
CREATE TABLE o(x);
${body}
`,
      2 * n,
    );
    expect(await rows(c, "SELECT count(*), count(DISTINCT id), sum(p) FROM t")).toEqual([
      [n, n, (n * (n + 1)) / 2 - 1],
    ]);
    const dump = await exportDump(c);
    expect(dump.status).toBe(200);
  });
});
