/**
 * Every schema SQLite accepts replicates and rebuilds, or is refused at
 * CREATE naming the construct: a cluster holding every kind gets writes that
 * exercise triggers, cascades and exact values, then a new replica is rebuilt
 * from a snapshot, and every node holds the same exact rows.
 */
import { describe, expect, it } from "vitest";
import { exec, freshCluster, query } from "./helpers";
import { NODES, addReplica, sameEverywhere } from "./node-images";

const SCHEMA = [
  "CREATE TABLE gen (id INTEGER PRIMARY KEY, a INTEGER, b AS (a * 2) STORED, c AS (a + 1) VIRTUAL)",
  "CREATE TABLE st (k TEXT PRIMARY KEY, v INTEGER, r REAL, b BLOB, x ANY) STRICT",
  "CREATE TABLE wr (k TEXT, n INTEGER, v, PRIMARY KEY (k, n)) WITHOUT ROWID",
  "CREATE TABLE wrs (k INTEGER PRIMARY KEY, v TEXT) WITHOUT ROWID, STRICT",
  "CREATE TABLE wrc (k PRIMARY KEY, v) WITHOUT ROWID -- a comment after the options",
  "CREATE TABLE wrd (k PRIMARY KEY, v) /* between */ WITHOUT /* words */ ROWID",
  "CREATE TABLE desc_pk (id INTEGER PRIMARY KEY DESC, v)",
  "CREATE VIRTUAL TABLE notes USING fts5(title, body)",
  "CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT)",
  "CREATE VIRTUAL TABLE docs_ext USING fts5(body)",
  "CREATE TABLE shadowed (rowid TEXT, oid INTEGER, v)",
  "CREATE TABLE aliased (rowid TEXT, oid TEXT, _rowid_ TEXT, id INTEGER PRIMARY KEY)",
  "CREATE TABLE ai (id INTEGER PRIMARY KEY AUTOINCREMENT, v)",
  "CREATE VIEW v_gen AS SELECT id, b FROM gen WHERE a > 0",
  "CREATE TABLE audit (id INTEGER PRIMARY KEY, what TEXT, at TEXT, r)",
  "CREATE TRIGGER gen_audit AFTER INSERT ON gen BEGIN INSERT INTO audit (what, at, r) VALUES ('gen ' || NEW.id, datetime('now'), random()); END",
  "CREATE TRIGGER gen_up AFTER UPDATE OF a ON gen WHEN NEW.a > 100 BEGIN INSERT INTO audit (what, at) VALUES ('big ' || NEW.id, strftime('%f')); END",
  "CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN INSERT INTO docs_ext (rowid, body) VALUES (NEW.id, NEW.body); END",
  "CREATE INDEX gen_partial ON gen (a) WHERE a > 10",
  "CREATE INDEX st_expr ON st (lower(k), v * 2)",
  "CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT UNIQUE)",
  "CREATE TABLE child (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES parent(id) ON DELETE CASCADE ON UPDATE CASCADE, pname TEXT REFERENCES parent(name) ON UPDATE SET NULL)",
  "CREATE TABLE child2 (id INTEGER PRIMARY KEY, pid INTEGER DEFAULT 0 REFERENCES parent(id) ON DELETE SET DEFAULT ON UPDATE CASCADE)",
];

const WRITES = [
  "INSERT INTO gen (a) VALUES (1), (20), (300)",
  "UPDATE gen SET a = a + 200 WHERE id = 1",
  "INSERT INTO st VALUES ('Key', 9223372036854775807, -0.0, X'00FF', 5), ('b', -9223372036854775808, 1e308, X'', 2.0), ('c', 0, 0.1, NULL, CAST(X'FF41' AS TEXT))",
  "INSERT INTO wr VALUES ('a', 1, 'x'), ('a', 2, 'y'), ('b', 1, randomblob(8))",
  "UPDATE wr SET n = n + 10 WHERE k = 'a'",
  "INSERT INTO wrs VALUES (1, 'one'), (2, 'two')",
  "INSERT INTO wrc VALUES (1, 'x'), ('k', 2.5)",
  "INSERT INTO wrd VALUES (X'01', 1)",
  "INSERT INTO desc_pk (v) VALUES ('a'), ('b')",
  "INSERT INTO notes (title, body) VALUES ('hello', 'hello world'), ('bye', 'goodbye moon')",
  "UPDATE notes SET body = 'hello there' WHERE title = 'hello'",
  "INSERT INTO docs (body) VALUES ('first doc'), ('second doc')",
  "INSERT INTO shadowed (rowid, oid, v) VALUES ('r', 7, 'a'), ('s', 8, 'b')",
  "UPDATE shadowed SET v = 'c' WHERE oid = 7",
  "INSERT INTO aliased (rowid, oid, _rowid_, id) VALUES ('a', 'b', 'c', 10), ('d', 'e', 'f', 11)",
  "INSERT INTO ai (v) VALUES ('a'), ('b'), ('c')",
  "DELETE FROM ai WHERE id = 3",
  "INSERT INTO ai (v) VALUES ('d')",
  "INSERT INTO parent (id, name) VALUES (0, 'zero'), (1, 'one'), (2, 'two'), (3, 'three')",
  "INSERT INTO child (pid, pname) VALUES (1, 'one'), (2, 'two'), (3, 'three')",
  "INSERT INTO child2 (pid) VALUES (1), (2)",
  "UPDATE parent SET id = 12, name = 'twelve' WHERE id = 2",
  "DELETE FROM parent WHERE id = 1",
  "INSERT OR REPLACE INTO parent (id, name) VALUES (13, 'three')",
];

/** Every table and view, with its rows in key order and every value exact. */
const READS = [
  "SELECT * FROM gen ORDER BY id",
  "SELECT k, v, r, b, x, typeof(x) FROM st ORDER BY k",
  "SELECT * FROM wr ORDER BY k, n",
  "SELECT * FROM wrs ORDER BY k",
  "SELECT k, v, typeof(k) FROM wrc ORDER BY k",
  "SELECT * FROM wrd",
  "SELECT rowid, * FROM desc_pk ORDER BY rowid",
  "SELECT rowid, * FROM notes ORDER BY rowid",
  "SELECT rowid, title FROM notes WHERE notes MATCH 'hello'",
  "SELECT * FROM docs ORDER BY id",
  "SELECT rowid, body FROM docs_ext WHERE docs_ext MATCH 'doc' ORDER BY rowid",
  'SELECT _rowid_, "rowid", oid, v FROM shadowed ORDER BY _rowid_',
  "SELECT * FROM aliased ORDER BY id",
  "SELECT * FROM ai ORDER BY id",
  "SELECT * FROM sqlite_sequence",
  "SELECT * FROM v_gen ORDER BY id",
  "SELECT * FROM audit ORDER BY id",
  "SELECT * FROM parent ORDER BY id",
  "SELECT * FROM child ORDER BY id",
  "SELECT * FROM child2 ORDER BY id",
  "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE '\\_repl\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' ORDER BY type, name",
];

describe("every schema kind, 4 replicas and one added from a snapshot", () => {
  it("replicates writes through triggers, cascades and exact values, and rebuilds a new replica identical", async () => {
    const c = freshCluster("schemas");
    for (const sql of SCHEMA) {
      const res = await exec(c, [{ sql }]);
      expect(res.status, `${sql}: ${JSON.stringify(res.body)}`).toBe(200);
    }
    for (const sql of WRITES) {
      const res = await exec(c, [{ sql }]);
      expect(res.status, `${sql}: ${JSON.stringify(res.body)}`).toBe(200);
    }
    const before = new Map<string, unknown[][]>();
    for (const sql of READS) before.set(sql, await sameEverywhere(c, sql));
    // What the writes did, as SQLite does it: cascades, SET NULL, SET DEFAULT, REPLACE.
    // REPLACE deleted parent 3 (its name was taken): a delete, so child 3 cascaded away.
    expect(before.get("SELECT * FROM child ORDER BY id")).toEqual([[2, 12, null]]);
    expect(before.get("SELECT * FROM child2 ORDER BY id")).toEqual([
      [1, 0],
      [2, 12],
    ]);
    expect(before.get("SELECT * FROM ai ORDER BY id")).toEqual([
      [1, "a"],
      [2, "b"],
      [4, "d"],
    ]);
    expect(before.get("SELECT * FROM audit ORDER BY id")?.length).toBe(4);

    const added = await addReplica(c);
    const nodes = [...NODES, added];
    for (const sql of READS) {
      expect(await sameEverywhere(c, sql, nodes), sql).toEqual(before.get(sql));
    }
    // The rebuilt replica goes on applying: more of each kind of write.
    for (const sql of WRITES.slice(0, 12)) {
      const res = await exec(c, [{ sql: sql.replace(/'(hello|first|a|k)'/, "'$1 again'") }]);
      expect([200, 400], `${sql}: ${JSON.stringify(res.body)}`).toContain(res.status);
    }
    for (const sql of READS) await sameEverywhere(c, sql, nodes);
    const strong = await query(c, "SELECT count(*) AS n FROM gen", { replica: added });
    expect(strong.status, JSON.stringify(strong.body)).toBe(200);
  }, 120_000);

  it.each([
    ["a contentless fts5 table", "CREATE VIRTUAL TABLE f USING fts5(a, content='')", "contentless"],
    [
      "an external-content fts5 table",
      "CREATE VIRTUAL TABLE f USING fts5(a, content='t', content_rowid='id')",
      "does not store its own rows",
    ],
    [
      "a virtual table of another module",
      "CREATE VIRTUAL TABLE r USING rtree(id, x0, x1)",
      "rtree",
    ],
    [
      "a table hiding its rowid behind columns named rowid, oid and _rowid_",
      "CREATE TABLE h (rowid, oid, _rowid_)",
      "rowid, oid and _rowid_",
    ],
  ])("refuses %s at CREATE, naming the construct", async (_, sql, named) => {
    const c = freshCluster("refused-schema");
    const res = await exec(c, [{ sql }]);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(JSON.stringify(res.body)).toContain(named);
  });
});
