/**
 * Breaks of the cluster's promises found by an adversarial review with a data
 * token (and, for the tunables, the admin token), reproduced through the front
 * door. Every `it` asserts what the docs promise; each failed on the code it
 * was written against, and the failure message shows what the cluster did.
 */
import { describe, expect, it } from "vitest";
import { type ReplicaStatus, ok, replicaStates, sameOnEveryNode } from "./review-helpers";
import { call, exec, freshCluster, patchTunables, query } from "./helpers";
import { addReplica, converged, NODES, rowsOn } from "./node-images";

describe("promise 4: coherent replicas hold the master's rows (row capture), 4 replicas", () => {
  it("a user AFTER INSERT trigger that updates the row it fires on: replicas keep the pre-trigger image", async () => {
    const c = freshCluster("trig-order-ins");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, x)");
    await ok(
      c,
      "CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE t SET x = 'changed' WHERE id = NEW.id; END",
    );
    await ok(c, "INSERT INTO t (id, x) VALUES (1, 'orig')");
    expect(await rowsOn(c, "master", "SELECT id, x FROM t")).toEqual([[1, "changed"]]);
    // The user trigger, created after the table's capture triggers, fires first: the
    // nested UPDATE is captured before the INSERT, whose image (NEW, 'orig') is applied last.
    await sameOnEveryNode(c, "SELECT id, x FROM t");
  });

  it("a user AFTER DELETE trigger that puts the row back: replicas delete it for good", async () => {
    const c = freshCluster("trig-order-del");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, x)");
    await ok(
      c,
      "CREATE TRIGGER tr AFTER DELETE ON t BEGIN INSERT INTO t VALUES (OLD.id, 'back'); END",
    );
    await ok(c, "INSERT INTO t VALUES (1, 'a')");
    await ok(c, "DELETE FROM t WHERE id = 1");
    expect(await rowsOn(c, "master", "SELECT id, x FROM t")).toEqual([[1, "back"]]);
    await sameOnEveryNode(c, "SELECT id, x FROM t");
  });
});

describe("promise 1: a data token cannot disable row capture, 4 replicas", () => {
  it("RAISE(IGNORE) in a user AFTER trigger skips the capture triggers: the row never reaches a replica", async () => {
    const c = freshCluster("raise-ignore");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, x)");
    await ok(
      c,
      "CREATE TRIGGER hide AFTER INSERT ON t WHEN NEW.x = 'hidden' BEGIN SELECT RAISE(IGNORE); END",
    );
    await ok(c, "INSERT INTO t VALUES (1, 'seen'), (2, 'hidden'), (3, 'seen')");
    expect(await rowsOn(c, "master", "SELECT id, x FROM t ORDER BY id")).toEqual([
      [1, "seen"],
      [2, "hidden"],
      [3, "seen"],
    ]);
    await sameOnEveryNode(c, "SELECT id, x FROM t ORDER BY id");
  });
});

describe("promise 4: user triggers run on the master only (the trigger guard), 4 replicas", () => {
  it("a WHEN clause with unbalanced parentheses, which would turn the guard into (guard AND 0) OR (1), is refused", async () => {
    const c = freshCluster("guard-parens");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, a, b)");
    await ok(c, "CREATE VIRTUAL TABLE f USING fts5(x)");
    // Spliced into `WHEN (guard) AND (<text>)`, this text closes the guard's operand:
    // on a replica applying `UPDATE ... SET` every column, the trigger would fire.
    const create = await exec(c, [
      {
        sql: "CREATE TRIGGER tr AFTER UPDATE OF b ON t WHEN 0) OR (1 BEGIN INSERT INTO f (x) VALUES ('replica only'); END",
      },
    ]);
    expect(create.status, JSON.stringify(create.body)).toBe(400);
    expect(JSON.stringify(create.body)).toMatch(/parentheses/);
    const stored = await rowsOn(
      c,
      "master",
      "SELECT count(*) FROM sqlite_schema WHERE name = 'tr'",
    );
    expect(stored).toEqual([[0]]);
    await ok(c, "INSERT INTO t VALUES (1, 1, 1)");
    await ok(c, "UPDATE t SET a = 2");
    await sameOnEveryNode(c, "SELECT rowid, x FROM f");
  });
});

describe("promise 4: writes shipped as statements (fts5) compute the same on every node, 4 replicas", () => {
  it("an fts5 insert past rowid 2^63-1 takes a random rowid on each node, and no digest sees it", async () => {
    const c = freshCluster("fts-rowid");
    await ok(c, "CREATE VIRTUAL TABLE f USING fts5(x)");
    expect((await patchTunables(c, { coherency_rejoin_penalty_ms: 0 })).status).toBe(200);
    // No fts5 table may hold rowid 2^63-1 (safety-review-3.test.ts has the
    // multi-row and trigger forms a last-rowid check could not see).
    const max = await exec(c, [
      { sql: "INSERT INTO f (rowid, x) VALUES (9223372036854775807, 'a')" },
    ]);
    expect(max.status, JSON.stringify(max.body)).toBe(400);
    expect((max.body.error as { code: string }).code).toBe("NON_DETERMINISTIC");
    await ok(c, "INSERT INTO f (rowid, x) VALUES (9223372036854775805, 'a')");
    await ok(c, "INSERT INTO f (x) VALUES ('b')");
    await sameOnEveryNode(c, "SELECT CAST(rowid AS TEXT), x FROM f ORDER BY x");
  });

  it("an fts5 insert reading pragma_table_list (which differs per node) is refused", async () => {
    const c = freshCluster("fts-pragma");
    await ok(c, "CREATE VIRTUAL TABLE f USING fts5(x)");
    // The master holds _cf_METADATA, the replicas do not: replayed, it counts differently.
    const res = await exec(c, [
      { sql: "INSERT INTO f (x) SELECT count(*) FROM pragma_table_list" },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect((res.body.error as { code: string }).code).toBe("NON_DETERMINISTIC");
    // What a replayed fts5 write may read: tables, fts5 tables, json_each and json_tree.
    await ok(c, "CREATE TABLE src (v)");
    await ok(c, "INSERT INTO src VALUES ('from a table')");
    await ok(c, "CREATE VIRTUAL TABLE g USING fts5(y)");
    await ok(c, "INSERT INTO g (y) VALUES ('from fts5')");
    await ok(c, "INSERT INTO f (x) SELECT v FROM src");
    await ok(c, "INSERT INTO f (x) SELECT y FROM g");
    const many = await ok(c, "INSERT INTO f (x) SELECT value FROM json_each(?)", ['["a","b"]']);
    const results = (many.body as { results: { rowsWritten: number; lastRowId: unknown }[] })
      .results;
    expect(results[0]).toMatchObject({ rowsWritten: 2, lastRowId: 4 });
    const deleted = await ok(c, "DELETE FROM f WHERE f MATCH 'b'");
    expect((deleted.body as { results: { rowsWritten: number }[] }).results[0]?.rowsWritten).toBe(
      1,
    );
    await sameOnEveryNode(c, "SELECT rowid, x FROM f ORDER BY rowid");
  });
});

describe("promise 4: a replica rebuilt from a snapshot holds the master's rows, 4 replicas plus one added", () => {
  it("content= inside a comment makes the snapshot skip an ordinary fts5 table's rows", async () => {
    const c = freshCluster("fts-comment");
    await ok(c, "CREATE VIRTUAL TABLE f USING fts5(x /* content= */)");
    await ok(c, "INSERT INTO f (rowid, x) VALUES (1, 'needle')");
    const id = await addReplica(c);
    await sameOnEveryNode(c, "SELECT rowid, x FROM f", [...NODES, id]);
  });

  it.each([
    ["content=t"],
    ["c=t"],
    ["CONTENT = 't'"],
    ["content=[t]"],
    ["content=''"],
    ["content=[]"],
    ["content=``"],
    ["contentless_delete=1, content=''"],
  ])("an fts5 table that does not keep its own rows (%s) is refused at CREATE", async (option) => {
    // An external-content index need not match its content table (rows can be
    // put in the index alone), so a rebuilt replica could not make the same one;
    // fts5 matches option names by prefix, so only what fts5 created tells.
    const c = freshCluster("fts-external");
    await ok(c, "CREATE TABLE t (x)");
    const res = await exec(c, [{ sql: `CREATE VIRTUAL TABLE f USING fts5(x, ${option})` }]);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(JSON.stringify(res.body)).toMatch(/does not store its own rows/);
  });

  it("a contentless fts5 table spelled content=[] is accepted, and no replica can be added after it", async () => {
    const c = freshCluster("fts-contentless");
    const create = await exec(c, [{ sql: "CREATE VIRTUAL TABLE f USING fts5(x, content=[])" }]);
    // determinism.md: contentless fts5 tables are refused at CREATE.
    const refused = create.status === 400;
    if (!refused) {
      await ok(c, "INSERT INTO f (rowid, x) VALUES (1, 'needle')");
      const id = await addReplica(c);
      let states: ReplicaStatus[] = [];
      try {
        await converged(c, 20_000);
      } catch {
        states = await replicaStates(c);
      }
      const added = states.find((r) => r.id === id);
      expect(
        added === undefined || added.state === "coherent",
        `${id}: ${added?.state}, snapshot error: ${added?.snapshot.lastError}`,
      ).toBe(true);
    }
    expect(create.status, `CREATE answered ${JSON.stringify(create.body)}`).toBe(400);
  });
});

describe("determinism.md: virtual table modules other than fts5 are refused at CREATE", () => {
  it.each([
    ["rtree", 'CREATE VIRTUAL TABLE "x using fts5" USING rtree(id, a, b)'],
    ["fts5vocab", "CREATE VIRTUAL TABLE \"using fts5\" USING fts5vocab(f, 'row')"],
  ])("%s, named so that its text contains 'using fts5'", async (_, sql) => {
    const c = freshCluster("vtab-module");
    await ok(c, "CREATE VIRTUAL TABLE f USING fts5(x)");
    const res = await exec(c, [{ sql }]);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
  });
});

describe("promise 7: no request makes a node hold unbounded memory", () => {
  it("a 250-byte INSERT ... SELECT randomblob() makes a 40 MB log record no relay call can carry", async () => {
    const c = freshCluster("huge-record");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, b)");
    const res = await exec(c, [
      {
        sql:
          "INSERT INTO t (b) SELECT randomblob(1000000) FROM " +
          "(WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 20) SELECT i FROM c)",
      },
    ]);
    // Either refused for its size, or carried to the replicas: not a record that
    // every relay and every pull fails on for as long as it stays in the log.
    if (res.status === 200) {
      let stuck: ReplicaStatus[] = [];
      try {
        await converged(c, 30_000);
      } catch {
        stuck = await replicaStates(c);
      }
      expect(
        stuck.length,
        stuck.map((r) => `${r.id} ${r.state} acked ${r.ackedLsn}: ${r.lastError}`).join("; "),
      ).toBe(0);
    } else {
      expect(res.status, JSON.stringify(res.body)).toBe(413);
    }
  });
});

describe("determinism.md: ALTER TABLE ships as its text", () => {
  it.each([
    ["RENAME COLUMN", "ALTER TABLE t RENAME COLUMN a TO z", "SELECT id, z, b FROM t"],
    ["DROP COLUMN", "ALTER TABLE t DROP COLUMN b", "SELECT id, a FROM t"],
    ["RENAME TO", "ALTER TABLE t RENAME TO u", "SELECT id, a, b FROM u"],
  ])("ALTER TABLE ... %s is accepted and replicated", async (_, alter, select) => {
    const c = freshCluster("alter");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, a, b)");
    await ok(c, "INSERT INTO t VALUES (1, 2, 3)");
    await ok(c, alter);
    await sameOnEveryNode(c, select);
  });
});

describe("queries read as SQLite reads them", () => {
  it.each([
    ["SELECT 1 AS a -- a closing comment", [[1]]],
    ["SELECT 1 AS a /* an unclosed comment", [[1]]],
    ["SELECT a FROM (SELECT 2 AS a) -- )", [[2]]],
  ])("%s: the trailing comment does not swallow the guard's wrapping", async (sql, rows) => {
    const c = freshCluster("trailing-comment");
    await ok(c, "CREATE TABLE t (a)");
    for (const replica of ["master", "replica-1"]) {
      const res = await query(c, sql, { replica, format: "arrays" });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect((res.body as unknown as { rows: unknown[][] }).rows).toEqual(rows);
    }
    const inExec = await ok(c, sql);
    expect(JSON.stringify(inExec.body)).toContain('"a":');
  });
});

describe("promise 6: tunables that contradict each other are refused", () => {
  it("durable_lsns with sync_mode none: a commit no replica has is answered 200", async () => {
    const c = freshCluster("durable-none");
    await ok(c, "CREATE TABLE t (a)");
    const patch = await patchTunables(c, {
      sync_mode: "none",
      durable_lsns: true,
      debug_fault_injection: true,
    });
    if (patch.status === 200) {
      for (const id of ["replica-1", "replica-2", "replica-3", "replica-4"]) {
        expect((await call("POST", `/admin/clusters/${c}/replicas/${id}/stop`)).status).toBe(200);
      }
      const res = await exec(c, [{ sql: "INSERT INTO t VALUES (1)" }]);
      // durable_lsns: NOT_DURABLE when fewer than a majority acked.
      expect(res.status, JSON.stringify(res.body)).toBe(503);
    }
    expect(patch.status, "the contradictory pair was accepted").toBe(400);
  });

  it("log_retain_records above log_max_records is refused", async () => {
    const c = freshCluster("retain-max");
    await ok(c, "CREATE TABLE t (a)");
    const patch = await patchTunables(c, { log_retain_records: 5_000, log_max_records: 1_000 });
    expect(patch.status, JSON.stringify(patch.body)).toBe(400);
    expect(JSON.stringify(patch.body)).toMatch(/log_retain_records.*log_max_records/);
  });

  it("commit_timeout_ms below rep_timeout_ms + coherency_lease_ms is a choice, not a contradiction: commits time out only until the lease runs out", async () => {
    // A client that wants a quick 504 (and retries with its key) may set it so; the
    // cost is COMMIT_TIMEOUT while a failed replica's lease runs, never a lost write.
    const c = freshCluster("lease-timeout");
    await ok(c, "CREATE TABLE t (a)");
    const patch = await patchTunables(c, {
      coherency_lease_ms: 3000,
      heartbeat_ms: 100,
      commit_timeout_ms: 1000,
      rep_timeout_ms: 500,
      debug_fault_injection: true,
    });
    expect(patch.status, JSON.stringify(patch.body)).toBe(200);
    await ok(c, "INSERT INTO t VALUES (0)");
    expect((await call("POST", `/admin/clusters/${c}/replicas/replica-1/stop`)).status).toBe(200);
    const timedOut = await exec(c, [{ sql: "INSERT INTO t VALUES (1)" }], "lease-timeout-1");
    expect(timedOut.status, JSON.stringify(timedOut.body)).toBe(504);
    await new Promise((r) => setTimeout(r, 3_000));
    const retried = await exec(c, [{ sql: "INSERT INTO t VALUES (1)" }], "lease-timeout-1");
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    await ok(c, "INSERT INTO t VALUES (2)");
    expect(await rowsOn(c, "master", "SELECT a FROM t ORDER BY a")).toEqual([[0], [1], [2]]);
  });
});

describe("what held (kept as checks)", () => {
  it("ON UPDATE CASCADE, exact REALs and edge values through a snapshot", async () => {
    const c = freshCluster("held");
    await ok(c, "CREATE TABLE p (id INTEGER PRIMARY KEY)");
    await ok(
      c,
      "CREATE TABLE ch (id INTEGER PRIMARY KEY, pid REFERENCES p(id) ON UPDATE CASCADE ON DELETE CASCADE)",
    );
    await ok(c, "INSERT INTO p VALUES (1)");
    await ok(c, "INSERT INTO ch VALUES (10, 1)");
    await ok(c, "UPDATE p SET id = 2");
    await ok(c, "CREATE TABLE v (id INTEGER PRIMARY KEY, x)");
    await ok(
      c,
      "INSERT INTO v (id, x) VALUES (-9223372036854775807 - 1, -0.0), (9223372036854775807, 1e308*10), " +
        "(2, -1e308*10), (3, CAST(X'610062' AS TEXT)), (4, CAST(X'FF00FE' AS TEXT)), (5, X''), (6, ''), " +
        "(7, 5e-324), (8, 0.1 + 0.2)",
    );
    const id = await addReplica(c);
    await sameOnEveryNode(c, "SELECT id, pid FROM ch", [...NODES, id]);
    await sameOnEveryNode(c, "SELECT id, x, typeof(x), hex(x) FROM v ORDER BY id", [...NODES, id]);
    const q = await query(c, "SELECT count(*) FROM _repl_changes", { replica: id });
    expect(q.status).toBe(400);
  });
});
