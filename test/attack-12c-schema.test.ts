/**
 * Attack on the schema re-read (schema.ts `described`): DDL sequences where a
 * table's name comes back with the same CREATE text, case-only renames, renamed
 * parents, fts5 recreated, rolled-back DDL, then a replica rebuilt from a
 * snapshot: every node must hold the same rows and verify must agree.
 */
import { describe, expect, it } from "vitest";
import { exec, freshCluster } from "./helpers";
import { addReplica, sameEverywhere } from "./node-images";

async function ok(c: string, sql: string): Promise<void> {
  const res = await exec(c, [{ sql }]);
  expect(res.status, `${sql}: ${JSON.stringify(res.body)}`).toBe(200);
}

describe("attack 12c: schema re-read", () => {
  it("same-text re-creations, case renames, parent renames, rolled-back DDL, fts5, then a new replica", async () => {
    const c = freshCluster("a12c-schema");
    // Child whose parent does not exist yet; the parent arrives later.
    await ok(
      c,
      "CREATE TABLE ch (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES P(id) ON DELETE CASCADE)",
    );
    await ok(c, "CREATE TABLE p (id INTEGER PRIMARY KEY)");
    await ok(c, "INSERT INTO ch (pid) VALUES (NULL)");
    await ok(c, "INSERT INTO p VALUES (1), (2), (3)");
    await ok(c, "INSERT INTO ch (pid) VALUES (1), (2), (3)");
    await ok(c, "DELETE FROM p WHERE id = 1");
    // Rename the parent's column and the parent: the child's text is rewritten.
    await ok(c, "ALTER TABLE p RENAME COLUMN id TO pk");
    await ok(c, "ALTER TABLE p RENAME TO pp");
    await ok(c, "DELETE FROM pp WHERE pk = 2");
    // Renames there and back: the text returns to what it was.
    await ok(c, 'ALTER TABLE pp RENAME TO "Q q"');
    await ok(c, 'DELETE FROM "Q q" WHERE pk = 3');
    await ok(c, 'ALTER TABLE "Q q" RENAME TO pp');
    await ok(c, "INSERT INTO pp VALUES (4)");
    await ok(c, "INSERT INTO ch (pid) VALUES (4)");
    // Rolled back DDL in one request: the table with a different key is undone.
    const rolled = await exec(c, [
      { sql: "DROP TABLE ch" },
      { sql: "CREATE TABLE ch (a TEXT PRIMARY KEY, pid) WITHOUT ROWID" },
      { sql: "INSERT INTO ch VALUES ('x', 1)" },
      { sql: "SELECT * FROM no_such_table" },
    ]);
    expect(rolled.status).not.toBe(200);
    await ok(c, "DELETE FROM pp WHERE pk = 4");
    await ok(c, "INSERT INTO ch (pid) VALUES (NULL)");
    // Same name, same text, recreated around a different-keyed version.
    await ok(c, "CREATE TABLE s (id INTEGER PRIMARY KEY, v)");
    await ok(c, "INSERT INTO s (v) VALUES ('a'), ('b')");
    await ok(c, "DROP TABLE s");
    await ok(c, "CREATE TABLE s (id INTEGER PRIMARY KEY DESC, v)");
    await ok(c, "INSERT INTO s VALUES (10, 'c'), (20, 'd')");
    await ok(c, "UPDATE s SET id = 11 WHERE id = 10");
    await ok(c, "DROP TABLE s");
    await ok(c, "CREATE TABLE s (id INTEGER PRIMARY KEY, v)");
    await ok(c, "INSERT INTO s (v) VALUES ('e')");
    await ok(c, "UPDATE s SET id = 5 WHERE v = 'e'");
    // CREATE TABLE AS with the same stored text as an earlier table.
    await ok(c, "CREATE TABLE g (a, b)");
    await ok(c, "INSERT INTO g VALUES (1, 2)");
    await ok(c, "DROP TABLE g");
    await ok(c, "CREATE TABLE g AS SELECT 1 AS a, 2 AS b");
    await ok(c, "INSERT INTO g VALUES (3, 4)");
    // Generated columns, added and dropped around the same text.
    await ok(c, "CREATE TABLE gen (id INTEGER PRIMARY KEY, a, b AS (a * 2))");
    await ok(c, "INSERT INTO gen (a) VALUES (1)");
    await ok(c, "ALTER TABLE gen ADD COLUMN c AS (a + 1)");
    await ok(c, "INSERT INTO gen (a) VALUES (2)");
    // fts5 dropped and re-created with the same text, and its shadows.
    await ok(c, "CREATE VIRTUAL TABLE f USING fts5(body)");
    await ok(c, "INSERT INTO f (body) VALUES ('hello world')");
    await ok(c, "DROP TABLE f");
    await ok(c, "CREATE VIRTUAL TABLE f USING fts5(body)");
    await ok(c, "INSERT INTO f (body) VALUES ('second')");
    await ok(c, "ALTER TABLE f RENAME TO f2");
    await ok(c, "INSERT INTO f2 (body) VALUES ('third')");
    // Temp tables and DDL in triggers, if allowed at all.
    const temp = await exec(c, [{ sql: "CREATE TEMP TABLE s (x)" }]);
    console.log("temp table:", temp.status, JSON.stringify(temp.body).slice(0, 200));
    await ok(c, "INSERT INTO s (v) VALUES ('after temp')");

    const replica = await addReplica(c);
    const nodes = ["master", "replica-1", "replica-2", "replica-3", "replica-4", replica];
    await ok(c, "INSERT INTO pp VALUES (9)");
    await ok(c, "INSERT INTO ch (pid) VALUES (9)");
    await ok(c, "DELETE FROM pp WHERE pk = 9");
    await ok(c, "UPDATE s SET v = 'z'");
    // Cascades ran on every node: only the rows with no parent are left.
    const ch = await sameEverywhere(c, "SELECT id, pid FROM ch ORDER BY id", nodes);
    expect(ch.map((r) => r[1])).toEqual([null, null]);
    expect(await sameEverywhere(c, "SELECT * FROM s ORDER BY id", nodes)).toHaveLength(2);
    await sameEverywhere(c, "SELECT rowid, * FROM g ORDER BY rowid", nodes);
    await sameEverywhere(c, "SELECT * FROM gen ORDER BY id", nodes);
    expect(await sameEverywhere(c, "SELECT body FROM f2 WHERE f2 MATCH 'third'", nodes)).toEqual([
      ["third"],
    ]);
  }, 60_000);
});
