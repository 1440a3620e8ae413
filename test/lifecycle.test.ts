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

async function setup(prefix: string, tunables: Record<string, unknown> = {}) {
  const c = freshCluster(prefix);
  const ddl = await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }]);
  expect(ddl.status).toBe(200);
  if (Object.keys(tunables).length > 0) {
    const res = await patchTunables(c, tunables);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
  return c;
}

type ReplicaRow = { id: string; state: string; ackedLsn: number; pullBatches: number };

async function replica(c: string, id: string): Promise<ReplicaRow> {
  const s = await status(c);
  const row = (s.body.replicas as unknown as ReplicaRow[]).find((r) => r.id === id);
  if (row === undefined) throw new Error(`no ${id}`);
  return row;
}

async function stopWriteStart(c: string, id: string, writes: number) {
  expect((await call("POST", `/admin/clusters/${c}/replicas/${id}/stop`)).status).toBe(200);
  for (let i = 0; i < writes; i++) {
    const w = await exec(c, [
      { sql: "INSERT INTO t (v) VALUES (?)", params: [`payload-${i}-${"x".repeat(100)}`] },
    ]);
    expect(w.status).toBe(200);
  }
  expect((await replica(c, id)).state).not.toBe("coherent");
  expect((await call("POST", `/admin/clusters/${c}/replicas/${id}/start`)).status).toBe(200);
  await waitUntil(`${id} coherent`, async () => (await replica(c, id)).state === "coherent");
}

describe("replica catch-up, 4 replicas", () => {
  it("a replica far behind (past logput_window_bytes) pulls the log in order and rejoins", async () => {
    const c = await setup("pull", {
      rep_timeout_ms: 200,
      coherency_lease_ms: 100,
      heartbeat_ms: 50,
      logput_window_bytes: 2000,
      coherency_rejoin_penalty_ms: 0,
      debug_fault_injection: true,
    });
    await stopWriteStart(c, "replica-2", 120);
    const r2 = await replica(c, "replica-2");
    expect(r2.pullBatches).toBeGreaterThan(0);
    const v = await verify(c);
    expect(v.body.mismatches).toEqual([]);
    expect(v.body.agree).toBe(true);
  });

  it("with logput_window_bytes 0 the relay resends from the replica's position instead", async () => {
    const c = await setup("push", {
      rep_timeout_ms: 200,
      coherency_lease_ms: 100,
      heartbeat_ms: 50,
      logput_window_bytes: 0,
      coherency_rejoin_penalty_ms: 0,
      debug_fault_injection: true,
    });
    await stopWriteStart(c, "replica-4", 120);
    expect((await replica(c, "replica-4")).pullBatches).toBe(0);
    expect((await verify(c)).body.agree).toBe(true);
  });

  it("a tunable change reaches the replicas: acks delayed by debug_ack_delay_ms slow commits until it is reset", async () => {
    const c = await setup("ackdelay");
    expect((await patchTunables(c, { debug_ack_delay_ms: 300 })).status).toBe(200);
    // The first message after the change carries it; give the relays a heartbeat.
    await new Promise((r) => setTimeout(r, 400));
    const started = Date.now();
    expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('slow')" }])).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    expect((await patchTunables(c, { debug_ack_delay_ms: 0 })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 700));
    const again = Date.now();
    expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('fast')" }])).status).toBe(200);
    expect(Date.now() - again).toBeLessThan(280);
  });
});

describe("master restart, 4 replicas", () => {
  it("after a crash the master keeps every acked write, bumps its term, and replays saved results", async () => {
    const c = await setup("crash", { debug_fault_injection: true });
    const acked: number[] = [];
    for (let i = 0; i < 10; i++) {
      const w = await exec(
        c,
        [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`k${i}`] }],
        `k${i}`,
      );
      expect(w.status).toBe(200);
      acked.push(w.body.lsn as number);
    }
    const before = await status(c);
    const { term, epoch } = before.body.master as unknown as { term: number; epoch: number };
    const crash = await call("POST", `/admin/clusters/${c}/master/crash`);
    expect(crash.status).toBe(202);
    await waitUntil("the master answers again", async () => {
      try {
        return (await status(c)).status === 200;
      } catch {
        return false;
      }
    });
    const after = await status(c);
    // A restart in place is a new incarnation of the same master, not a new term.
    const restarted = after.body.master as unknown as { term: number; epoch: number };
    expect(restarted.epoch).toBeGreaterThan(epoch);
    expect(restarted.term).toBe(term);
    expect(after.body.master.lsn).toBe(before.body.master.lsn);
    // A retry of an acked request is answered from the saved result, not executed again.
    const retry = await exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: ["k3"] }], "k3");
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ lsn: acked[3], replayed: true });
    const rows = await query(c, "SELECT COUNT(*) AS n FROM t");
    expect(rows.body.rows).toEqual([{ n: 10 }]);
    // Writes go on, and every replica converges.
    expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('after')" }])).status).toBe(200);
    await waitUntil("all replicas coherent", async () =>
      (await status(c)).body.replicas.every((r) => r.state === "coherent"),
    );
    expect((await verify(c)).body.agree).toBe(true);
  });
});

describe("metrics", () => {
  it("exposes commits, hand-offs and per-replica gauges in Prometheus text to the admin token only", async () => {
    const c = await setup("metrics");
    for (let i = 0; i < 3; i++) {
      expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('m')" }])).status).toBe(200);
    }
    const { exports } = await import("cloudflare:workers");
    const res = await exports.default.fetch(
      new Request(`http://cluster.test/metrics?cluster=${c}`, {
        headers: { authorization: "Bearer dev-admin-token" },
      }),
    );
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain(`dosql_commits_total{cluster="${c}"} 4`);
    expect(text).toContain(`dosql_master_lsn{cluster="${c}"} 4`);
    expect(text).toMatch(
      new RegExp(`dosql_replica_coherent\\{cluster="${c}",replica="replica-1"\\} 1`),
    );
    expect(text).toContain("# TYPE dosql_ack_latency_ms histogram");
    const denied = await exports.default.fetch(
      new Request(`http://cluster.test/metrics?cluster=${c}`, {
        headers: { authorization: "Bearer dev-data-token" },
      }),
    );
    expect(denied.status).toBe(401);
  });
});

describe("log retention and snapshot rebuild, 4 replicas", () => {
  it("truncates the log past a stopped replica, rebuilds it from a snapshot, and it converges", async () => {
    const c = await setup("snapshot", {
      rep_timeout_ms: 200,
      coherency_lease_ms: 100,
      heartbeat_ms: 50,
      coherency_rejoin_penalty_ms: 0,
      log_retain_records: 5,
      log_max_records: 100,
      debug_fault_injection: true,
    });
    // Every kind of schema object, so the rebuild has to get each one right.
    const ddl = await exec(c, [
      { sql: "CREATE TABLE seq (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)" },
      { sql: "CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID" },
      { sql: "CREATE INDEX t_v ON t (v)" },
      { sql: "CREATE VIEW t_count AS SELECT COUNT(*) AS n FROM t" },
      { sql: "CREATE TABLE audit (n INTEGER)" },
      {
        sql: "CREATE TRIGGER t_audit AFTER INSERT ON t BEGIN INSERT INTO audit VALUES (NEW.id); END",
      },
    ]);
    expect(ddl.status, JSON.stringify(ddl.body)).toBe(200);
    expect((await call("POST", `/admin/clusters/${c}/replicas/replica-3/stop`)).status).toBe(200);
    for (let i = 0; i < 300; i++) {
      const w = await exec(c, [
        { sql: "INSERT INTO t (v) VALUES (?)", params: [`v${i}`] },
        { sql: "INSERT INTO seq (v) VALUES (?)", params: [`s${i}`] },
        { sql: "INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)", params: [`k${i % 17}`, i] },
        ...(i % 50 === 0 ? [{ sql: "DELETE FROM seq WHERE id % 3 = 0" }] : []),
      ]);
      expect(w.status).toBe(200);
    }
    await waitUntil("the log is truncated past replica-3", async () => {
      const s = await status(c);
      const master = s.body.master as unknown as { truncatedThrough: number; logRows: number };
      return master.truncatedThrough > 10 && master.logRows <= 110;
    });
    expect((await call("POST", `/admin/clusters/${c}/replicas/replica-3/start`)).status).toBe(200);
    await waitUntil("replica-3 rebuilt and coherent", async () => {
      const r3 = (await status(c)).body.replicas.find((r) => r.id === "replica-3") as unknown as
        | { state: string; snapshots: number }
        | undefined;
      return r3?.state === "coherent" && r3.snapshots > 0;
    });
    const v = await verify(c);
    expect(v.body.mismatches).toEqual([]);
    expect(v.body.agree).toBe(true);
    // Rowids and AUTOINCREMENT counters came across: new inserts agree too.
    const more = await exec(c, [
      { sql: "INSERT INTO t (v) VALUES ('after')" },
      { sql: "INSERT INTO seq (v) VALUES ('after')" },
    ]);
    expect(more.status).toBe(200);
    expect((await verify(c)).body.agree).toBe(true);
    // The rebuilt replica serves strong reads again, through the view it was given.
    let pinned = await query(c, "SELECT n FROM t_count", { replica: "replica-3" });
    await waitUntil("replica-3 serves strong reads", async () => {
      pinned = await query(c, "SELECT n FROM t_count", { replica: "replica-3" });
      return pinned.status === 200;
    });
    expect(pinned.body.rows).toEqual([{ n: 301 }]);
  });
});

describe("heartbeats and lag, 4 replicas", () => {
  type Row = {
    id: string;
    state: string;
    lagMs: number;
    idleMs: number;
    skipped: number;
    heartbeats: number;
    lastAckAt: number | null;
  };
  const row = async (c: string, id: string) =>
    ((await status(c)).body.replicas as unknown as Row[]).find((r) => r.id === id) as Row;

  it("lag grows while debug_ack_delay_ms holds the acks back, and returns to 0 after", async () => {
    const c = await setup("lag", { debug_ack_delay_ms: 1500 });
    await new Promise((r) => setTimeout(r, 300));
    const write = exec(c, [{ sql: "INSERT INTO t (v) VALUES ('lagging')" }]);
    await new Promise((r) => setTimeout(r, 300));
    const first = await row(c, "replica-1");
    await new Promise((r) => setTimeout(r, 400));
    const second = await row(c, "replica-1");
    expect(first.lagMs).toBeGreaterThan(0);
    expect(second.lagMs).toBeGreaterThanOrEqual(first.lagMs + 300);
    expect((await write).status).toBe(200);
    expect((await patchTunables(c, { debug_ack_delay_ms: 0 })).status).toBe(200);
    await waitUntil("lag back to 0", async () => (await row(c, "replica-1")).lagMs === 0);
  });

  it("heartbeats go to an idle replica, and idleMs stays under heartbeat_ms", async () => {
    const c = await setup("idle", { heartbeat_ms: 100 });
    const before = await row(c, "replica-2");
    await new Promise((r) => setTimeout(r, 600));
    const after = await row(c, "replica-2");
    expect(after.heartbeats).toBeGreaterThan(before.heartbeats + 2);
    expect(after.idleMs).toBeLessThan(300);
    expect(after.lagMs).toBe(0);
  });

  it("a replica skipping a long run of records it has keeps acking and never goes incoherent", async () => {
    const c = await setup("skip", {
      // Well above one call's time on a loaded 2-core machine (300 ms was not, once).
      rep_timeout_ms: 600,
      relay_batch_max_records: 5,
      debug_apply_delay_ms: 15,
      debug_fault_injection: true,
    });
    for (let i = 0; i < 40; i++) {
      const rows = Array.from({ length: 10 }, (_, j) => ({ v: `r${i}-${j}` }));
      const w = await call("POST", `/v1/clusters/${c}/tables/t/rows`, { body: { rows } });
      expect(w.status).toBe(200);
    }
    // Resend everything: replica-1 skips ~40 batches, each held 15 ms, while writes go on.
    const rewind = await call("POST", `/admin/clusters/${c}/replicas/replica-1/rewind`, {
      body: { lsn: 0 },
    });
    expect(rewind.status, JSON.stringify(rewind.body)).toBe(200);
    const acks: number[] = [];
    for (let i = 0; i < 8; i++) {
      expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('during')" }])).status).toBe(200);
      const r1 = await row(c, "replica-1");
      expect(r1.state).toBe("coherent");
      acks.push(r1.lastAckAt ?? 0);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(new Set(acks).size).toBeGreaterThan(4);
    await waitUntil("the skip is over", async () => (await row(c, "replica-1")).skipped >= 40);
    expect((await row(c, "replica-1")).state).toBe("coherent");
    expect((await verify(c)).body.agree).toBe(true);
  });
});

describe("membership", () => {
  it("an added replica is bootstrapped from a snapshot and ends identical to the others", async () => {
    const c = await setup("add", {
      coherency_rejoin_penalty_ms: 0,
      log_retain_records: 5,
      log_max_records: 100,
    });
    for (let i = 0; i < 150; i++) {
      expect(
        (await exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`a${i}`] }])).status,
      ).toBe(200);
    }
    const added = await call<{ id: string; replicas: string[] }>(
      "POST",
      `/admin/clusters/${c}/replicas`,
    );
    expect(added.status).toBe(201);
    expect(added.body.id).toBe("replica-5");
    expect(added.body.replicas).toEqual([
      "replica-1",
      "replica-2",
      "replica-3",
      "replica-4",
      "replica-5",
    ]);
    // Writes go on while it is being built.
    for (let i = 0; i < 20; i++) {
      expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('more')" }])).status).toBe(200);
    }
    await waitUntil("replica-5 coherent", async () => {
      const r5 = (await status(c)).body.replicas.find((r) => r.id === "replica-5") as unknown as
        | { state: string; snapshots: number }
        | undefined;
      return r5?.state === "coherent" && r5.snapshots === 1;
    });
    const v = await verify(c);
    expect(v.body.mismatches).toEqual([]);
    expect(v.body.agree).toBe(true);
    let read = await query(c, "SELECT COUNT(*) AS n FROM t", { replica: "replica-5" });
    await waitUntil("replica-5 serves strong reads", async () => {
      read = await query(c, "SELECT COUNT(*) AS n FROM t", { replica: "replica-5" });
      return read.status === 200;
    });
    expect(read.body.rows).toEqual([{ n: 170 }]);
  });

  it("a removed replica leaves the sanctioned set at once while in-flight commits still complete", async () => {
    const c = await setup("remove", { debug_ack_delay_ms: 300 });
    await new Promise((r) => setTimeout(r, 400));
    const inFlight = Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`f${i}`] }]),
      ),
    );
    await new Promise((r) => setTimeout(r, 50));
    const removed = await call<{ replicas: string[] }>(
      "DELETE",
      `/admin/clusters/${c}/replicas/replica-4`,
    );
    expect(removed.status).toBe(200);
    expect(removed.body.replicas).toEqual(["replica-1", "replica-2", "replica-3"]);
    expect((await inFlight).map((w) => w.status)).toEqual([200, 200, 200, 200, 200]);
    expect((await patchTunables(c, { debug_ack_delay_ms: 0 })).status).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('after')" }])).status).toBe(200);
    const s = await status(c);
    expect(s.body.replicas.map((r) => r.id)).toEqual(["replica-1", "replica-2", "replica-3"]);
    expect((await verify(c)).body.agree).toBe(true);
    const gone = await query(c, "SELECT 1", { replica: "replica-4" });
    expect(gone.status).toBe(404);
    const again = await call("DELETE", `/admin/clusters/${c}/replicas/replica-4`);
    expect(again.status).toBe(404);
    // Ids are never reused: the next replica added is replica-5.
    const added = await call<{ id: string }>("POST", `/admin/clusters/${c}/replicas`);
    expect(added.body.id).toBe("replica-5");
  });
});

describe("disconnect fault hook", () => {
  it("a replica cut off from the master goes incoherent and catches up once reconnected", async () => {
    const c = await setup("cut", {
      rep_timeout_ms: 200,
      coherency_lease_ms: 100,
      heartbeat_ms: 50,
      coherency_rejoin_penalty_ms: 0,
      debug_fault_injection: true,
    });
    const cut = await call("POST", `/admin/clusters/${c}/replicas/replica-1/disconnect`);
    expect(cut.status).toBe(200);
    for (let i = 0; i < 30; i++) {
      expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('cut')" }])).status).toBe(200);
    }
    const r1 = (await status(c)).body.replicas.find((r) => r.id === "replica-1");
    expect(r1?.state).not.toBe("coherent");
    expect((await call("POST", `/admin/clusters/${c}/replicas/replica-1/connect`)).status).toBe(
      200,
    );
    await waitUntil("replica-1 coherent", async () =>
      (await status(c)).body.replicas.every((r) => r.state === "coherent"),
    );
    expect((await verify(c)).body.agree).toBe(true);
  });
});
