import { describe, expect, it } from "vitest";
import {
  call,
  exec,
  freshCluster,
  patchTunables,
  query,
  status,
  verify,
  waitUntil,
} from "./helpers";

const REPLICAS = ["replica-1", "replica-2", "replica-3", "replica-4"];

async function createTable(
  cluster: string,
  ddl = "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)",
) {
  const res = await exec(cluster, [{ sql: ddl }]);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res;
}

describe("cluster with 4 replicas, full sync", () => {
  it("makes an answered write readable with strong consistency on every replica", async () => {
    const c = freshCluster("readable");
    await createTable(c);
    for (let i = 0; i < 5; i++) {
      const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`row-${i}`] }]);
      expect(w.status).toBe(200);
      // Immediately after the answer, every replica already has the row.
      for (const replica of REPLICAS) {
        const r = await query(c, "SELECT COUNT(*) AS n FROM t", { replica });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(r.body.servedBy).toBe(replica);
        expect(r.body.rows).toEqual([{ n: i + 1 }]);
      }
    }
  });

  it("answers exec with the LSN, per-statement results and a bookmark", async () => {
    const c = freshCluster("shape");
    const ddl = await createTable(c);
    expect(ddl.body).toMatchObject({ lsn: 1, results: [{ rowsWritten: 0, lastRowId: null }] });
    const w = await exec(c, [
      { sql: "INSERT INTO t (v) VALUES (?)", params: ["a"] },
      { sql: "INSERT INTO t (v) VALUES (?), (?)", params: ["b", "c"] },
      { sql: "UPDATE t SET v = 'z' WHERE id > 100" },
    ]);
    expect(w.status).toBe(200);
    expect(w.body).toMatchObject({
      lsn: 2,
      results: [
        { rowsWritten: 1, lastRowId: 1 },
        { rowsWritten: 2, lastRowId: 3 },
        { rowsWritten: 0, lastRowId: null },
      ],
    });
    const bookmark = w.body.bookmark as string;
    const r = await query(c, "SELECT v FROM t ORDER BY id", { consistency: "bookmark", bookmark });
    expect(r.status).toBe(200);
    expect(r.body.appliedLsn).toBeGreaterThanOrEqual(2);
    expect(r.body.rows.map((row) => row.v)).toEqual(["a", "b", "c"]);
  });

  it("returns the rows of a RETURNING clause in the statement's result", async () => {
    const c = freshCluster("returning");
    await createTable(c);
    const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('a'), ('b') RETURNING id, v" }]);
    expect(w.status).toBe(200);
    expect(w.body.results).toEqual([
      {
        rowsWritten: 2,
        lastRowId: 2,
        rows: [
          { id: 1, v: "a" },
          { id: 2, v: "b" },
        ],
      },
    ]);
  });

  it("the rows route inserts every row in one transaction", async () => {
    const c = freshCluster("rows");
    await createTable(c, "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER)");
    const res = await call("POST", `/v1/clusters/${c}/tables/items/rows`, {
      body: {
        rows: [
          { name: "a", qty: 1 },
          { name: "b", qty: 2 },
          { name: "c", qty: true },
        ],
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.lsn).toBe(2);
    const r = await query(c, "SELECT name, qty FROM items ORDER BY id");
    expect(r.body.rows).toEqual([
      { name: "a", qty: 1 },
      { name: "b", qty: 2 },
      { name: "c", qty: 1 },
    ]);
  });

  it("leaves every replica identical after 1,000 mixed writes from 32 concurrent clients", async () => {
    const c = freshCluster("mixed");
    await createTable(
      c,
      "CREATE TABLE acct (id INTEGER PRIMARY KEY, owner INTEGER, balance INTEGER)",
    );
    let next = 0;
    const errors: string[] = [];
    const client = async (owner: number) => {
      for (;;) {
        const n = next++;
        if (n >= 1000) return;
        const kind = n % 5;
        const statements =
          kind === 0 || kind === 1
            ? [{ sql: "INSERT INTO acct (owner, balance) VALUES (?, ?)", params: [owner, n] }]
            : kind === 2
              ? [{ sql: "UPDATE acct SET balance = balance + 1 WHERE owner = ?", params: [owner] }]
              : kind === 3
                ? [
                    {
                      sql: "INSERT INTO acct (owner, balance) VALUES (?, random() % 1000)",
                      params: [owner],
                    },
                    {
                      sql: "UPDATE acct SET balance = balance - 1 WHERE id % 7 = ?",
                      params: [n % 7],
                    },
                  ]
                : [
                    {
                      sql: "DELETE FROM acct WHERE owner = ? AND balance % 3 = 0",
                      params: [owner],
                    },
                  ];
        const res = await exec(c, statements);
        if (res.status !== 200) errors.push(JSON.stringify(res.body));
      }
    };
    await Promise.all(Array.from({ length: 32 }, (_, i) => client(i)));
    expect(errors).toEqual([]);
    const v = await verify(c);
    expect(v.status).toBe(200);
    expect(v.body.mismatches).toEqual([]);
    expect(v.body.agree).toBe(true);
    expect(v.body.lsn).toBe(1001);
  });

  it("executes a retried request with the same Idempotency-Key once and replays its result", async () => {
    const c = freshCluster("idem");
    await createTable(c);
    const statements = [{ sql: "INSERT INTO t (v) VALUES (?)", params: ["once"] }];
    const first = await exec(c, statements, "key-1");
    expect(first.status).toBe(200);
    expect(first.body.replayed).toBeUndefined();
    const again = await exec(c, statements, "key-1");
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ...first.body, replayed: true });
    // Concurrent duplicates: still one execution.
    const burst = await Promise.all(Array.from({ length: 8 }, () => exec(c, statements, "key-2")));
    expect(new Set(burst.map((r) => r.body.lsn)).size).toBe(1);
    expect(burst.filter((r) => r.body.replayed === true)).toHaveLength(7);
    const r = await query(c, "SELECT COUNT(*) AS n FROM t");
    expect(r.body.rows).toEqual([{ n: 2 }]);
    const reused = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('other')" }], "key-1");
    expect(reused.status).toBe(409);
    expect(reused.body).toMatchObject({ error: { code: "IDEMPOTENCY_KEY_REUSED" } });
  });

  it("forgets saved results after idempotency_retention_ms, so the key can be used again", async () => {
    const c = freshCluster("retention");
    await createTable(c);
    const tuned = await patchTunables(c, {
      idempotency_retention_ms: 1000,
      commit_timeout_ms: 1000,
      rep_timeout_ms: 500,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    const first = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('one')" }], "short-lived");
    expect(first.status).toBe(200);
    const reused = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('two')" }], "short-lived");
    expect(reused.status).toBe(409);
    await waitUntil(
      "the saved result is pruned",
      async () => {
        const again = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('two')" }], "short-lived");
        return again.status === 200 && again.body.replayed === undefined;
      },
      10_000,
      250,
    );
    const rows = await query(c, "SELECT v FROM t ORDER BY id");
    expect(rows.body.rows).toEqual([{ v: "one" }, { v: "two" }]);
  });

  it("marks a stopped replica incoherent after rep_timeout_ms while commits go on, then it catches up", async () => {
    const c = freshCluster("stop");
    await createTable(c);
    const tuned = await patchTunables(c, {
      rep_timeout_ms: 300,
      coherency_lease_ms: 200,
      heartbeat_ms: 50,
      coherency_rejoin_penalty_ms: 1500,
      debug_fault_injection: true,
    });
    expect(tuned.status).toBe(200);
    const stop = await call("POST", `/admin/clusters/${c}/replicas/replica-3/stop`);
    expect(stop.status, JSON.stringify(stop.body)).toBe(200);

    const started = Date.now();
    const first = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('while-down')" }]);
    expect(first.status).toBe(200);
    const demotedBy = Date.now();
    // The first commit waited for the deadline and the lease, then went on without replica-3.
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    const s1 = await status(c);
    const r3 = s1.body.replicas.find((r) => r.id === "replica-3");
    expect(r3?.state).toBe("incoherent");
    expect(r3?.incoherentReason).toMatch(/ack-timeout|unreachable/);

    for (let i = 0; i < 20; i++) {
      const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`down-${i}`] }]);
      expect(w.status).toBe(200);
    }
    // While stopped it serves no reads.
    const pinned = await query(c, "SELECT COUNT(*) AS n FROM t", { replica: "replica-3" });
    expect(pinned.status).toBe(503);

    const start = await call("POST", `/admin/clusters/${c}/replicas/replica-3/start`);
    expect(start.status).toBe(200);
    await waitUntil("replica-3 coherent again", async () => {
      const s = await status(c);
      return s.body.replicas.find((r) => r.id === "replica-3")?.state === "coherent";
    });
    // Not before the rejoin penalty, counted from its demotion, has passed.
    expect(Date.now() - demotedBy).toBeGreaterThanOrEqual(1500 - 400);
    const s2 = await status(c);
    expect(s2.body.replicas.find((r) => r.id === "replica-3")?.ackedLsn).toBe(s2.body.master.lsn);
    const v = await verify(c);
    expect(v.body.agree).toBe(true);
    // Coherent again: it is in the wait set and serves strong reads of every acked write.
    await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('after')" }]);
    const read = await query(c, "SELECT COUNT(*) AS n FROM t", { replica: "replica-3" });
    expect(read.status).toBe(200);
    expect(read.body.rows).toEqual([{ n: 22 }]);
  });
});
