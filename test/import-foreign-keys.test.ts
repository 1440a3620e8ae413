/**
 * An import of rows that name parent rows coming later in the dump
 * (core/held-rows.ts). `sqlite3` loads such a dump with foreign keys off;
 * Durable Object SQLite enforces them on every statement, so the import holds
 * a child row back until its parent is in, lets rows that name each other in
 * together, and fails naming the row whose parent is nowhere. Each export
 * here puts a child row first: a table naming itself in key order, two
 * tables naming each other, a WITHOUT ROWID table, a chain across batches.
 */
import { describe, expect, it } from "vitest";
import {
  agreedChecksums,
  DUMP_HEAD,
  exportDump,
  importDump,
  restoresIdentically,
  rows,
} from "./backup-helpers";
import { freshCluster } from "./helpers";
import { ok } from "./review-helpers";

const TREE = "CREATE TABLE tree (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES tree (id))";

function error(res: { body: Record<string, unknown> }): Record<string, unknown> {
  return res.body.error as Record<string, unknown>;
}

describe("an import whose rows come before their parent rows", () => {
  it("loads a table that names itself, child rows first in rowid order", async () => {
    const c = freshCluster("fk-self");
    await ok(c, TREE);
    await ok(c, "INSERT INTO tree VALUES (9, NULL)");
    await ok(c, "INSERT INTO tree VALUES (1, 9), (2, 1), (5, 2)");
    await ok(c, "INSERT INTO tree VALUES (3, 5)");
    const dump = await exportDump(c);
    // Rows go out in rowid order: 1 names 9, which comes last.
    expect(dump.text.indexOf("VALUES(1,9)")).toBeLessThan(dump.text.indexOf("VALUES(9,NULL)"));
    const target = await restoresIdentically(c, "fk-self-restored");
    expect(await rows(target, "SELECT id, parent FROM tree ORDER BY id")).toEqual([
      [1, 9],
      [2, 1],
      [3, 5],
      [5, 2],
      [9, null],
    ]);
  });

  it("loads two tables that name each other", async () => {
    const c = freshCluster("fk-cycle");
    await ok(c, "CREATE TABLE a (id INTEGER PRIMARY KEY, b INTEGER REFERENCES b (id))");
    await ok(c, "CREATE TABLE b (id INTEGER PRIMARY KEY, a INTEGER REFERENCES a (id))");
    await ok(c, "INSERT INTO a VALUES (1, NULL)");
    await ok(c, "INSERT INTO b VALUES (7, 1)");
    await ok(c, "UPDATE a SET b = 7 WHERE id = 1");
    const target = await restoresIdentically(c, "fk-cycle-restored");
    expect(await rows(target, "SELECT a.id, a.b, b.a FROM a JOIN b ON b.id = a.b")).toEqual([
      [1, 7, 1],
    ]);
  });

  it("loads a WITHOUT ROWID table that names itself, children first in key order", async () => {
    const c = freshCluster("fk-worowid");
    await ok(c, "CREATE TABLE w (k TEXT PRIMARY KEY, parent TEXT REFERENCES w (k)) WITHOUT ROWID");
    await ok(c, "INSERT INTO w VALUES ('z', NULL)");
    await ok(c, "INSERT INTO w VALUES ('m', 'z'), ('a', 'm')");
    await restoresIdentically(c, "fk-worowid-restored");
  });

  it("loads rows that wait for parents in the next batch, triggers not fired", async () => {
    const c = freshCluster("fk-batches");
    const n = 12_000;
    await ok(c, TREE);
    await ok(c, "CREATE TABLE fired (id)");
    // Each row names the one before it, but every 1,000th names the one after
    // it: with 5,000 rows a batch, some wait across a batch boundary.
    await ok(c, "INSERT INTO tree VALUES (1, NULL)");
    await ok(
      c,
      `WITH RECURSIVE k(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM k WHERE i < ${n})
       INSERT INTO tree SELECT i, i - 1 FROM k`,
    );
    await ok(c, `UPDATE tree SET parent = id + 1 WHERE id % 1000 = 0 AND id < ${n}`);
    // Created after the rows: a load that inserted a row after it would fire it.
    await ok(
      c,
      "CREATE TRIGGER tree_in AFTER INSERT ON tree BEGIN INSERT INTO fired VALUES (new.id); END",
    );
    const target = await restoresIdentically(c, "fk-batches-restored");
    expect(await rows(target, "SELECT count(*), sum(parent) FROM tree")).toEqual(
      await rows(c, "SELECT count(*), sum(parent) FROM tree"),
    );
    expect(await rows(target, "SELECT count(*) FROM fired")).toEqual([[0]]);
  });

  it("loads a list in reverse: every row names the next", async () => {
    const c = freshCluster("fk-chain");
    const n = 1_500;
    await ok(c, TREE);
    await ok(
      c,
      `WITH RECURSIVE k(i) AS (SELECT ${n} UNION ALL SELECT i - 1 FROM k WHERE i > 1)
       INSERT INTO tree SELECT i, CASE WHEN i = ${n} THEN NULL ELSE i + 1 END FROM k`,
    );
    const target = await restoresIdentically(c, "fk-chain-restored");
    expect(await rows(target, "SELECT count(*) FROM tree")).toEqual([[n]]);
  });

  it("lets in rows that name each other across statements, together", async () => {
    const c = freshCluster("fk-rows-cycle");
    // Two rows naming each other, 300 rows apart: never in one INSERT, no order lets them in one by one.
    const middle = Array.from(
      { length: 300 },
      (_, i) => `INSERT INTO tree VALUES(${i + 2},NULL);\n`,
    );
    const dump = `${DUMP_HEAD}${TREE};\nINSERT INTO tree VALUES(1,302);\n${middle.join("")}INSERT INTO tree VALUES(302,1);\nCOMMIT;\n`;
    const res = await importDump(c, dump);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.rows).toBe(302);
    expect(
      await rows(c, "SELECT id, parent FROM tree WHERE parent IS NOT NULL ORDER BY id"),
    ).toEqual([
      [1, 302],
      [302, 1],
    ]);
    await agreedChecksums(c);
  });

  it("runs a trigger, DML or sqlite_sequence line only after the rows before it are in", async () => {
    const c = freshCluster("fk-barrier");
    const dump = `${DUMP_HEAD}${TREE};
CREATE TABLE fired (id);
INSERT INTO tree VALUES(1,2);
INSERT INTO tree VALUES(2,NULL);
CREATE TRIGGER t_in AFTER INSERT ON tree BEGIN INSERT INTO fired VALUES (new.id); END;
UPDATE tree SET parent = 1 WHERE id = 2 AND (SELECT count(*) FROM tree) = 2;
COMMIT;
`;
    const res = await importDump(c, dump);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await rows(c, "SELECT count(*) FROM fired")).toEqual([[0]]);
    expect(await rows(c, "SELECT id, parent FROM tree ORDER BY id")).toEqual([
      [1, 2],
      [2, 1],
    ]);
    await agreedChecksums(c);
  });
});

describe("an import whose rows name parent rows that never come", () => {
  it("fails naming the row, after the rows that could go in", async () => {
    const c = freshCluster("fk-orphan");
    const dump = `${DUMP_HEAD}${TREE};\nINSERT INTO tree VALUES(1,NULL);\nINSERT INTO tree VALUES(2,77);\nINSERT INTO tree VALUES(3,1);\nCOMMIT;\n`;
    const res = await importDump(c, dump);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(error(res).message).toMatch(/FOREIGN KEY constraint failed/);
    expect(error(res).message).toMatch(/line 5\b/);
    expect(error(res).sql).toMatch(/VALUES\(\?,\?\)/);
    expect(error(res).line).toBe(5);
  });

  it("fails at a statement that must not run before a row still waiting", async () => {
    const c = freshCluster("fk-orphan-barrier");
    const dump = `${DUMP_HEAD}${TREE};\nCREATE TABLE other (x);\nINSERT INTO tree VALUES(1,5);\nINSERT INTO other VALUES(1);\nUPDATE other SET x = 2;\nINSERT INTO tree VALUES(5,NULL);\nCOMMIT;\n`;
    const res = await importDump(c, dump);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(error(res).message).toMatch(/FOREIGN KEY constraint failed/);
    expect(error(res).line).toBe(5);
  });

  it("refuses once more rows wait than it holds back, saying how to order the dump", async () => {
    const c = freshCluster("fk-too-many");
    const n = 1_500;
    const pad = "x".repeat(1_500);
    const big = "CREATE TABLE big (id INTEGER PRIMARY KEY, parent REFERENCES big (id), pad TEXT)";
    const children = Array.from(
      { length: n },
      (_, i) => `INSERT INTO big VALUES(${i + 1},${n + 1},'${pad}');\n`,
    );
    const dump = `${DUMP_HEAD}${big};\n${children.join("")}INSERT INTO big VALUES(${n + 1},NULL,'');\nCOMMIT;\n`;
    const res = await importDump(c, dump);
    expect(res.status, JSON.stringify(res.body).slice(0, 400)).toBe(400);
    expect(error(res).message).toMatch(
      /more than an import holds back \(5000 rows, 2000000 bytes\)/,
    );
    expect(error(res).message).toMatch(/parent rows come before/);
  });
});
