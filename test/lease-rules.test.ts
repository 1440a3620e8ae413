/**
 * Every lease rule holds across mode switches, master restarts and removals:
 * a write is acknowledged only once every replica that may serve a strong read
 * without it has it or has lost its lease.
 */
import { describe, expect, it } from "vitest";
import { type ApiResult, call, exec, freshCluster, patchTunables, query, status } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Rows = { rows: Record<string, unknown>[]; servedBy: string; appliedLsn: number };
interface ReplicaRow {
  id: string;
  state: string;
  ackedLsn: number;
  leaseUntil: number;
}

async function setup(prefix: string, tunables: Record<string, unknown>) {
  const c = freshCluster(prefix);
  const ddl = await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }]);
  expect(ddl.status).toBe(200);
  const tuned = await patchTunables(c, tunables);
  expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
  return c;
}

const replicaRow = async (c: string, id: string) =>
  ((await status(c)).body.replicas as unknown as ReplicaRow[]).find((r) => r.id === id);

const fault = (c: string, id: string, route: string, body?: unknown) =>
  call("POST", `/admin/clusters/${c}/replicas/${id}/${route}`, body === undefined ? {} : { body });

/** A strong read that answers 200 must include W; a 503 is allowed (it may not serve). */
function expectSeesOrRefuses(read: ApiResult<Rows>, what: string): void {
  if (read.status === 503) return;
  expect(read.status, `${what}: ${JSON.stringify(read.body)}`).toBe(200);
  expect(
    read.body.rows.map((r) => r.v),
    what,
  ).toContain("w");
}

describe("sync_mode quorum -> full with a commit still waiting, 4 replicas", () => {
  it("the waiting commit switches to full's rules: it waits for every coherent replica, one it never reached included", async () => {
    const c = await setup("q2full", {
      sync_mode: "quorum",
      sync_quorum: 2,
      rep_timeout_ms: 60_000,
      commit_timeout_ms: 60_000,
      coherency_lease_ms: 5_000,
      coherency_rejoin_penalty_ms: 0,
      heartbeat_ms: 100,
      slow_replica_factor: 0,
      debug_fault_injection: true,
    });
    // replica-3 is cut off (it stays coherent: rep_timeout_ms is a minute); the others
    // take 1.5 s per message, so W waits for its quorum of two.
    expect((await fault(c, "replica-3", "disconnect")).status).toBe(200);
    for (const id of ["replica-1", "replica-2", "replica-4"]) {
      expect((await fault(c, id, "delay", { ms: 1_500 })).status).toBe(200);
    }
    let answered = false;
    const write = exec(c, [{ sql: "INSERT INTO t (v) VALUES ('w')" }]).then((w) => {
      answered = true;
      return w;
    });
    await sleep(300);
    expect((await patchTunables(c, { sync_mode: "full" })).status).toBe(200);
    // Two replicas have W well within this; under full sync that is not enough.
    await sleep(2_500);
    const r3 = await replicaRow(c, "replica-3");
    expect(r3?.state).toBe("coherent");
    expect(answered, "W was acknowledged while coherent replica-3 lacked it").toBe(false);
    expect((await fault(c, "replica-3", "connect")).status).toBe(200);
    const w = await write;
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    const after = await replicaRow(c, "replica-3");
    expect(after?.ackedLsn).toBeGreaterThanOrEqual(w.body.lsn as number);
    expectSeesOrRefuses(
      await query(c, "SELECT v FROM t ORDER BY id", { replica: "replica-3" }),
      "replica-3 after W was acknowledged",
    );
  });
});

async function crashMaster(c: string): Promise<void> {
  const crash = await call("POST", `/admin/clusters/${c}/master/crash`);
  expect(crash.status).toBe(202);
}

describe("master restart, 4 replicas", () => {
  it("a lease granted before a restart is honoured for as long as it was granted, though coherency_lease_ms was lowered", async () => {
    const c = await setup("restartlease", {
      coherency_lease_ms: 2_000,
      rep_timeout_ms: 200,
      heartbeat_ms: 100,
      slow_replica_factor: 0,
      debug_fault_injection: true,
    });
    await sleep(300);
    // replica-1 keeps the 2 s lease it holds and takes 4 s over every message from now on.
    expect((await fault(c, "replica-1", "delay", { ms: 4_000 })).status).toBe(200);
    const granted = (await replicaRow(c, "replica-1"))?.leaseUntil ?? 0;
    expect(granted).toBeGreaterThan(Date.now() + 1_000);
    expect((await patchTunables(c, { coherency_lease_ms: 100, heartbeat_ms: 50 })).status).toBe(
      200,
    );
    await crashMaster(c);
    // replica-1 misses W's 200 ms deadline; W may be acknowledged only once its lease is over.
    const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('w')" }]);
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    expect(
      Date.now(),
      "W was acknowledged while replica-1 may hold its lease",
    ).toBeGreaterThanOrEqual(granted);
    expectSeesOrRefuses(
      await query(c, "SELECT v FROM t ORDER BY id", { replica: "replica-1" }),
      "replica-1 after W was acknowledged",
    );
  });

  it("a replica removed just before a restart holds up commits until its lease has run out", async () => {
    const c = await setup("restartremoved", {
      coherency_lease_ms: 2_000,
      heartbeat_ms: 100,
      slow_replica_factor: 0,
      debug_fault_injection: true,
    });
    await sleep(300);
    const granted = (await replicaRow(c, "replica-4"))?.leaseUntil ?? 0;
    expect(granted).toBeGreaterThan(Date.now() + 1_000);
    const removed = await call("DELETE", `/admin/clusters/${c}/replicas/replica-4`);
    expect(removed.status).toBe(200);
    await crashMaster(c);
    const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('w')" }]);
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    expect(
      Date.now(),
      "W was acknowledged while removed replica-4 may hold its lease",
    ).toBeGreaterThanOrEqual(granted);
    // Once its lease is over, nothing waits for it any more.
    const started = Date.now();
    expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('after')" }])).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(1_500);
  });
});

describe("clock guard band (lease_guard_ms), 4 replicas", () => {
  it.each([
    { guardMs: null, servedInsideBand: true },
    { guardMs: 1_500, servedInsideBand: false },
  ])(
    "a replica stops serving strong reads lease_guard_ms before its lease instant ($guardMs)",
    async ({ guardMs, servedInsideBand }) => {
      const c = await setup("guard", {
        coherency_lease_ms: 3_000,
        heartbeat_ms: 100,
        debug_fault_injection: true,
        ...(guardMs === null ? {} : { lease_guard_ms: guardMs }),
      });
      await sleep(300);
      // No message reaches replica-1 from now on: the last lease it took is its last one.
      expect((await fault(c, "replica-1", "disconnect")).status).toBe(200);
      const leaseUntil = (await replicaRow(c, "replica-1"))?.leaseUntil ?? 0;
      const read = () => query(c, "SELECT COUNT(*) AS n FROM t", { replica: "replica-1" });
      const early = await read();
      expect(early.status, JSON.stringify(early.body)).toBe(200);
      // 1 s before the lease instant: inside a 1.5 s guard band, outside a 5 ms one.
      await sleep(leaseUntil - 1_000 - Date.now());
      const late = await read();
      if (servedInsideBand) {
        expect(late.status, JSON.stringify(late.body)).toBe(200);
      } else {
        expect(late.status, JSON.stringify(late.body)).toBe(503);
        expect(JSON.stringify(late.body)).toMatch(/no valid lease/);
      }
    },
  );
});
