/**
 * Each node keeps what it read of a table (columns, key, foreign keys) while
 * the table's CREATE text stays the same, and reads it again when DDL changes
 * it. Every change below keeps the name and changes what a row is: a node
 * that kept the old reading would capture or apply the wrong columns, or miss
 * a cascade, and the nodes would differ.
 */
import { describe, expect, it } from "vitest";
import { exec, freshCluster } from "./helpers";
import { sameEverywhere } from "./node-images";

async function run(c: string, statements: string[]): Promise<void> {
  for (const sql of statements) {
    const res = await exec(c, [{ sql }]);
    expect(res.status, `${sql}: ${JSON.stringify(res.body)}`).toBe(200);
  }
}

describe("a table's definition changes under the same name", () => {
  it("ALTER TABLE, drop and re-create, and a renamed parent reach every node", async () => {
    const c = freshCluster("reread");
    await run(c, [
      "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT)",
      "INSERT INTO t (a) VALUES ('one')",
      // A column more: the next insert's image must carry it everywhere.
      "ALTER TABLE t ADD COLUMN b INTEGER DEFAULT 7",
      "INSERT INTO t (a, b) VALUES ('two', 9007199254740993)",
      "ALTER TABLE t RENAME COLUMN a TO label",
      "UPDATE t SET label = label || '!' WHERE id = 2",
      "ALTER TABLE t DROP COLUMN b",
      "INSERT INTO t (label) VALUES ('three')",
      // The same name, another key: no INTEGER PRIMARY KEY now, rows keyed by rowid.
      "DROP TABLE t",
      "CREATE TABLE t (id TEXT PRIMARY KEY, v) WITHOUT ROWID",
      "INSERT INTO t VALUES ('k', 1), ('j', 2)",
      "UPDATE t SET id = 'z' WHERE id = 'k'",
      // A foreign key appears with the child's new text: the cascade must reach replicas.
      "CREATE TABLE p (id INTEGER PRIMARY KEY)",
      "CREATE TABLE ch (id INTEGER PRIMARY KEY, pid INTEGER)",
      "INSERT INTO p VALUES (1), (2)",
      "INSERT INTO ch (pid) VALUES (1), (2)",
      "DROP TABLE ch",
      "CREATE TABLE ch (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p(id) ON DELETE CASCADE)",
      "INSERT INTO ch (pid) VALUES (1), (2)",
      // Renaming the parent rewrites the child's text (its REFERENCES clause).
      "ALTER TABLE p RENAME TO parent",
      "DELETE FROM parent WHERE id = 1",
    ]);
    expect(await sameEverywhere(c, "SELECT * FROM t ORDER BY id")).toEqual([
      ["j", 2],
      ["z", 1],
    ]);
    expect(await sameEverywhere(c, "SELECT * FROM ch ORDER BY id")).toEqual([[2, 2]]);
    expect(await sameEverywhere(c, "SELECT sql FROM sqlite_schema WHERE name = 'ch'")).toEqual([
      [
        'CREATE TABLE ch (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES "parent"(id) ON DELETE CASCADE)',
      ],
    ]);
  });

  it("a column added while the table's reading is kept reaches every node's image", async () => {
    const c = freshCluster("reread-cols");
    await run(c, [
      "CREATE TABLE w (id INTEGER PRIMARY KEY, a)",
      "INSERT INTO w (a) VALUES (1)",
      "ALTER TABLE w ADD COLUMN b",
      "UPDATE w SET b = X'00FF' WHERE id = 1",
      "INSERT INTO w (a, b) VALUES (2, 2.5)",
    ]);
    expect(await sameEverywhere(c, "SELECT id, a, quote(b), typeof(b) FROM w ORDER BY id")).toEqual(
      [
        [1, 1, "X'00FF'", "blob"],
        [2, 2, "2.5", "real"],
      ],
    );
  });
});
