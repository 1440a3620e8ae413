/**
 * Adversarial review, round 2 (regressions now): breaks of the cluster's promises (docs/security.md,
 * docs/determinism.md, docs/architecture.md, docs/api.md) reproduced through the
 * front door with a data token (the admin token only to add a replica, read
 * status and run verify). Every `it` outside "held" asserts what the docs
 * promise and fails on the code it was written against; the comment above each
 * names the promise and the exact sequence.
 */
import { describe, expect, it } from "vitest";
import { allCoherent, ok, sameOnEveryNode } from "./review-helpers";
import { exec, freshCluster, verify } from "./helpers";
import { NODES, addReplica, rowsOn } from "./node-images";

describe("promise 1 / 2: row capture fires before every user trigger", () => {
  // Promise 1 (no data-token request can disable row capture) and 2 (a coherent
  // replica is identical to the master). Sequence:
  //   CREATE TABLE T (id INTEGER PRIMARY KEY, x)
  //   CREATE TRIGGER hide AFTER INSERT ON t WHEN NEW.x = 'hidden' BEGIN SELECT RAISE(IGNORE); END
  //   INSERT INTO T VALUES (1, 'seen'), (2, 'hidden'), (3, 'seen')
  // SQLite stores the trigger's tbl_name as written ('t'), the capture triggers'
  // as the table is named ('T'). The round-1 fix (remake capture triggers after any
  // newer user trigger on the same table) compares the names case-sensitively, so
  // the user trigger stays newest, fires first, and RAISE(IGNORE) skips the capture
  // of row 2: every replica stays coherent without it (verify disagrees, no replica
  // is marked diverged).
  it("a trigger that names its table in another letter case fires before capture: RAISE(IGNORE) hides a row from every replica", async () => {
    const c = freshCluster("case-trigger");
    await ok(c, "CREATE TABLE T (id INTEGER PRIMARY KEY, x)");
    await ok(
      c,
      "CREATE TRIGGER hide AFTER INSERT ON t WHEN NEW.x = 'hidden' BEGIN SELECT RAISE(IGNORE); END",
    );
    await ok(c, "INSERT INTO T VALUES (1, 'seen'), (2, 'hidden'), (3, 'seen')");
    expect(await rowsOn(c, "master", "SELECT id, x FROM T ORDER BY id")).toEqual([
      [1, "seen"],
      [2, "hidden"],
      [3, "seen"],
    ]);
    await sameOnEveryNode(c, "SELECT id, x FROM T ORDER BY id");
  });

  // Same root cause, the other round-1 variant: an AFTER INSERT trigger updating
  // its own row, on a table named in another case, is captured before the insert,
  // whose stale image (NEW) is applied last on the replicas.
  it("a trigger that names its table in another letter case and updates its own row: replicas keep the pre-trigger image", async () => {
    const c = freshCluster("case-trigger-upd");
    await ok(c, "CREATE TABLE Tab (id INTEGER PRIMARY KEY, x)");
    await ok(
      c,
      "CREATE TRIGGER tr AFTER INSERT ON TAB BEGIN UPDATE tab SET x = 'changed' WHERE id = NEW.id; END",
    );
    await ok(c, "INSERT INTO Tab (id, x) VALUES (1, 'orig')");
    expect(await rowsOn(c, "master", "SELECT id, x FROM Tab")).toEqual([[1, "changed"]]);
    await sameOnEveryNode(c, "SELECT id, x FROM Tab");
  });
});

describe("promise 4: every schema SQLite accepts replicates", () => {
  // Promise 4 (and 2: replicas neither coherent nor diverged-and-rebuilt, just stuck).
  // determinism.md: DDL ships "the statement's text, and any rows it changed
  // (cascades of DROP TABLE)". Sequence:
  //   CREATE TABLE p (id INTEGER PRIMARY KEY)
  //   CREATE TABLE ch (id INTEGER PRIMARY KEY, pid REFERENCES p(id) ON DELETE CASCADE)
  //   INSERT INTO p VALUES (1); INSERT INTO ch VALUES (10, 1)
  //   DROP TABLE p            -- 200 on the master; its implicit DELETE cascades to ch
  // A replica runs DROP TABLE p first, then applies the captured `DELETE FROM ch WHERE
  // id = 10`, which SQLite cannot compile once ch's parent is gone ("no such table:
  // main.p"). That is not a DivergedError, so the batch is retried forever: every
  // replica stays at the LSN before the DROP, is marked incoherent (ack-timeout) and is
  // never rebuilt.
  it.each([["CASCADE"], ["SET NULL"]])(
    "DROP TABLE of a parent whose children ON DELETE %s: every replica stops applying",
    async (action) => {
      const c = freshCluster("drop-parent");
      await ok(c, "CREATE TABLE p (id INTEGER PRIMARY KEY)");
      await ok(
        c,
        `CREATE TABLE ch (id INTEGER PRIMARY KEY, pid REFERENCES p(id) ON DELETE ${action})`,
      );
      await ok(c, "INSERT INTO p VALUES (1)");
      await ok(c, "INSERT INTO ch VALUES (10, 1)");
      await ok(c, "DROP TABLE p");
      await ok(c, "CREATE TABLE after_drop (a)");
      await sameOnEveryNode(c, "SELECT id, pid FROM ch ORDER BY id");
    },
  );

  // The same DROP, with a trigger on the child writing fts5: its effect reaches no
  // capture (fts5 writes never do), and replicas run DDL with triggers off, so
  // the schema change is refused instead.
  it("DROP TABLE of a parent whose cascade would fire a trigger writing fts5 is refused, and nothing changes", async () => {
    const c = freshCluster("drop-parent-fts");
    await ok(c, "CREATE TABLE p (id INTEGER PRIMARY KEY)");
    await ok(c, "CREATE TABLE ch (id INTEGER PRIMARY KEY, pid REFERENCES p(id) ON DELETE CASCADE)");
    await ok(c, "CREATE VIRTUAL TABLE f USING fts5(x)");
    await ok(
      c,
      "CREATE TRIGGER gone AFTER DELETE ON ch BEGIN INSERT INTO f (x) VALUES ('child ' || OLD.id); END",
    );
    await ok(c, "INSERT INTO p VALUES (1)");
    await ok(c, "INSERT INTO ch VALUES (10, 1)");
    const drop = await exec(c, [{ sql: "DROP TABLE p" }]);
    expect(drop.status, JSON.stringify(drop.body)).toBe(400);
    expect(JSON.stringify(drop.body)).toMatch(/would write a virtual table/);
    expect(await rowsOn(c, "master", "SELECT count(*) FROM p")).toEqual([[1]]);
    // As the error says: the trigger goes first, then the table.
    await ok(c, "DROP TRIGGER gone");
    await ok(c, "DROP TABLE p");
    await sameOnEveryNode(c, "SELECT rowid, x FROM f ORDER BY rowid");
    await sameOnEveryNode(c, "SELECT id, pid FROM ch ORDER BY id");
  });

  // Promise 4: a replica added later becomes coherent with identical rows. Sequence:
  //   CREATE TABLE p (a); CREATE UNIQUE INDEX pa ON p (a)
  //   CREATE TABLE c (x REFERENCES p (a))    -- parent key made unique by an index
  //   INSERT INTO p VALUES (1); INSERT INTO c VALUES (1)
  //   POST /admin/clusters/{c}/replicas
  // The snapshot install creates every table, inserts the rows, and only then the
  // indexes: inserting c's row before pa exists is "foreign key mismatch" (an error
  // at prepare, which defer_foreign_keys does not defer). The stream fails and is
  // retried for ever; the new replica never leaves "new".
  it("a foreign key whose parent key is unique through a CREATE UNIQUE INDEX: a new replica never installs its snapshot", async () => {
    const c = freshCluster("fk-unique-index");
    await ok(c, "CREATE TABLE p (a)");
    await ok(c, "CREATE UNIQUE INDEX pa ON p (a)");
    await ok(c, "CREATE TABLE c (x REFERENCES p (a))");
    await ok(c, "INSERT INTO p VALUES (1)");
    await ok(c, "INSERT INTO c VALUES (1)");
    const id = await addReplica(c);
    await sameOnEveryNode(c, "SELECT x FROM c", [...NODES, id]);
  });
});

describe("promise 2 / 4: a replica rebuilt from a snapshot is the master's", () => {
  // Promise 4 (rebuilt replica identical) and 2 (verify must never say agree when
  // nodes differ). Sequence:
  //   CREATE VIRTUAL TABLE f USING fts5(a, b)
  //   INSERT INTO f (rowid, a, b) VALUES (1, 'x', 'y y y y'), (2, 'y', 'x x x x y y y')
  //   INSERT INTO f (f, rank) VALUES ('rank', 'bm25(100.0, 0.01)')   -- fts5's persistent rank
  //   POST /admin/clusters/{c}/replicas
  // The snapshot copies f's rows but not its configuration (f_config): the new replica
  // ranks with bm25's default weights, so `ORDER BY rank` answers in another order and
  // with other values there, while verify (which hashes only f's content) agrees.
  // Second test: a later fts5 write (shipped as its statement) that reads `ORDER BY
  // rank` then stores other text on that replica while its digest (changes(), the
  // rowid) matches the master's: it stays coherent with other rows.
  it("fts5's rank configuration is not in the snapshot: a rebuilt replica ranks differently and verify agrees", async () => {
    const c = freshCluster("fts-rank");
    await ok(c, "CREATE VIRTUAL TABLE f USING fts5(a, b)");
    await ok(
      c,
      "INSERT INTO f (rowid, a, b) VALUES (1, 'x', 'y y y y'), (2, 'y', 'x x x x y y y')",
    );
    await ok(c, "INSERT INTO f (f, rank) VALUES ('rank', 'bm25(100.0, 0.01)')");
    const id = await addReplica(c);
    await allCoherent(c);
    const ranked = "SELECT rowid, rank FROM f WHERE f MATCH 'x' ORDER BY rank";
    const v = await verify(c);
    expect(v.body.agree, JSON.stringify(v.body.mismatches)).toBe(true);
    expect(await rowsOn(c, id, ranked), `${id} (rebuilt) vs master, while verify agrees`).toEqual(
      await rowsOn(c, "master", ranked),
    );
  });

  it("fts5's rank configuration is not in the snapshot: an fts5 write ordered by rank stores other rows on the rebuilt replica, which stays coherent", async () => {
    const c = freshCluster("fts-rank-write");
    await ok(c, "CREATE VIRTUAL TABLE f USING fts5(a, b)");
    await ok(
      c,
      "INSERT INTO f (rowid, a, b) VALUES (1, 'x', 'y y y y'), (2, 'y', 'x x x x y y y')",
    );
    await ok(c, "INSERT INTO f (f, rank) VALUES ('rank', 'bm25(100.0, 0.01)')");
    const id = await addReplica(c);
    await allCoherent(c);
    await ok(
      c,
      "INSERT INTO f (rowid, a, b) SELECT 100, 'best ' || rowid, '' FROM f WHERE f MATCH 'x' ORDER BY rank LIMIT 1",
    );
    await sameOnEveryNode(c, "SELECT rowid, a, b FROM f ORDER BY rowid", [...NODES, id]);
  });

  // Promise 4 and 2. "sqlite_sequence is the user's: writes to it replicate"
  // (security.md). Sequence:
  //   CREATE TABLE a (id INTEGER PRIMARY KEY AUTOINCREMENT, v)
  //   INSERT INTO a (v) VALUES (1), (2)
  //   DELETE FROM sqlite_sequence
  //   POST /admin/clusters/{c}/replicas
  // The snapshot carries an empty sequence list, and install restores sqlite_sequence
  // only when the list is non-empty; inserting a's rows has meanwhile set ('a', 2)
  // there. The new replica is coherent with a row the master does not have; an fts5
  // write that reads sqlite_sequence (allowed: it is a table) then stores other text on
  // it with the same digest.
  it("an emptied sqlite_sequence: a rebuilt replica holds a row the master does not", async () => {
    const c = freshCluster("seq-empty");
    await ok(c, "CREATE TABLE a (id INTEGER PRIMARY KEY AUTOINCREMENT, v)");
    await ok(c, "INSERT INTO a (v) VALUES (1), (2)");
    await ok(c, "DELETE FROM sqlite_sequence");
    await ok(c, "CREATE VIRTUAL TABLE f USING fts5(x)");
    const id = await addReplica(c);
    await allCoherent(c);
    // Replayed fts5 writes no longer read sqlite_sequence at all (round 3): the
    // counters themselves are compared.
    await ok(c, "INSERT INTO f (rowid, x) VALUES (1, 'after the rebuild')");
    await sameOnEveryNode(c, "SELECT rowid, x FROM f", [...NODES, id]);
    await sameOnEveryNode(c, "SELECT name, seq FROM sqlite_sequence", [...NODES, id]);
  });
});

describe("held (attacks that did not break a promise; kept as checks)", () => {
  it("a trigger on an fts5 shadow table, or an index on one, is refused", async () => {
    const c = freshCluster("held-shadow");
    await ok(c, "CREATE VIRTUAL TABLE f USING fts5(x)");
    await ok(c, "CREATE TABLE log (id INTEGER PRIMARY KEY, x)");
    const trigger = await exec(c, [
      {
        sql: "CREATE TRIGGER ts AFTER INSERT ON f_data BEGIN INSERT INTO log (x) VALUES (NEW.id); END",
      },
    ]);
    expect(trigger.status, JSON.stringify(trigger.body)).toBe(400);
    const index = await exec(c, [{ sql: "CREATE INDEX ix ON f_content (c0)" }]);
    expect(index.status, JSON.stringify(index.body)).toBe(400);
  });

  it("an fts5 table with locale=1 (whose locale a snapshot would drop) is refused at CREATE", async () => {
    const c = freshCluster("held-locale");
    const res = await exec(c, [{ sql: "CREATE VIRTUAL TABLE f USING fts5(x, locale=1)" }]);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
  });

  it("ALTER TABLE ADD COLUMN NOT NULL DEFAULT, a generated column and an index on it rebuild from a snapshot", async () => {
    const c = freshCluster("held-add-column");
    await ok(c, "CREATE TABLE t (a)");
    await ok(c, "INSERT INTO t VALUES (1)");
    await ok(c, "ALTER TABLE t ADD COLUMN b NOT NULL DEFAULT 'x'");
    await ok(c, "ALTER TABLE t ADD COLUMN c AS (a + 1)");
    await ok(c, "CREATE INDEX tc ON t (c)");
    const failing = await exec(c, [
      { sql: "ALTER TABLE t ADD COLUMN d INTEGER DEFAULT 0 CHECK (d > 0)" },
    ]);
    expect(failing.status, JSON.stringify(failing.body)).toBe(400);
    const id = await addReplica(c);
    await sameOnEveryNode(c, "SELECT rowid, a, b, c FROM t", [...NODES, id]);
  });
});
