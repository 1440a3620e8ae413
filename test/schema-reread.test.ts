/**
 * Each node keeps what it read of a table (columns, key, foreign keys) while
 * the table's CREATE text stays the same, and reads it again when DDL changes
 * it. Every change below keeps the name and changes what a row is: a node
 * that kept the old reading would capture or apply the wrong columns, or miss
 * a cascade, and the nodes would differ.
 */
import { describe, expect, it } from "vitest";
import { call, exec, freshCluster, patchTunables, status, waitUntil } from "./helpers";
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

describe("a table's rowid alias, whatever indexes it has", () => {
  it("reads the same on a node that read it before an index and on one that starts after", async () => {
    const c = freshCluster("reread-alias");
    expect((await patchTunables(c, { debug_fault_injection: true })).status).toBe(200);
    await run(c, [
      // Wider than its index on k, so a scan of the index is the cheaper one.
      "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT NOT NULL, client INTEGER)",
      "INSERT INTO t (k, client) VALUES ('a', 1), ('b', 1), ('c', 2)",
      // An index on k covers the rowid: `SELECT id FROM t` may scan it, and a
      // reading of the alias that asked the planner then found none.
      "CREATE INDEX t_k ON t (k)",
      "INSERT INTO t (k, client) VALUES ('d', 2)",
    ]);
    // The master starts again and reads t afresh; the replicas keep what they read.
    const crashed = await call("POST", `/admin/clusters/${c}/master/crash`, { body: {} });
    expect(crashed.status, JSON.stringify(crashed.body)).toBe(202);
    await waitUntil("the master back", async () => (await status(c)).status === 200, 10_000, 50);
    await run(c, [
      "UPDATE t SET k = k || '!' WHERE id = 2",
      "DELETE FROM t WHERE id = 3",
      "INSERT INTO t (k, client) VALUES ('e', 3)",
    ]);
    expect(await sameEverywhere(c, "SELECT id, k FROM t ORDER BY id")).toEqual([
      [1, "a"],
      [2, "b!"],
      [4, "d"],
      [5, "e"],
    ]);
    expect((await call("POST", `/admin/clusters/${c}/verify`, { body: {} })).body.agree).toBe(true);
    const replicas = (await status(c)).body.replicas as unknown as { state: string }[];
    expect(replicas.map((r) => r.state)).toEqual(replicas.map(() => "coherent"));
  }, 60_000);
});
