/**
 * The read barrier, through the front door: a strong read answers only once
 * every commit it could have observed is acknowledged, so no later strong read
 * anywhere can return an older state. Each case makes a write W that is
 * applied somewhere while it is not yet acknowledged, reads it there, and then
 * reads on a node that does not have W yet but holds a valid lease.
 */
import { describe, expect, it } from "vitest";
import { type ApiResult, call, exec, freshCluster, patchTunables, query, status } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Rows = { rows: Record<string, unknown>[]; servedBy: string; appliedLsn: number };

async function setup(prefix: string, tunables: Record<string, unknown>) {
  const c = freshCluster(prefix);
  const ddl = await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }]);
  expect(ddl.status).toBe(200);
  const tuned = await patchTunables(c, tunables);
  expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
  return c;
}

const values = (read: ApiResult<Rows>) => (read.body.rows ?? []).map((r) => r.v);

/** A strong read that answers 200 must include W; a 503 is allowed (it may not serve). */
function expectSeesOrRefuses(read: ApiResult<Rows>, what: string): void {
  if (read.status === 503) return;
  expect(read.status, `${what}: ${JSON.stringify(read.body)}`).toBe(200);
  expect(values(read), `${what} (served by ${read.body.servedBy})`).toContain("w");
}

/** Until when the master says the replica may hold the last lease it was granted. */
async function leaseOf(c: string, id: string): Promise<number> {
  const rows = (await status(c)).body.replicas as unknown as { id: string; leaseUntil: number }[];
  return rows.find((r) => r.id === id)?.leaseUntil ?? 0;
}

const outstanding = async (c: string) => (await status(c)).body.master.waiter.outstanding;

describe("read barrier on the master, 4 replicas", () => {
  it("a strong read pinned to the master does not return a write before it is acknowledged", async () => {
    // Replicas sleep 2.5 s per message; a 10 s lease keeps the leases they hold valid.
    const c = await setup("rb-master", {
      coherency_lease_ms: 10_000,
      heartbeat_ms: 100,
      slow_replica_factor: 0,
    });
    await sleep(300);
    expect((await patchTunables(c, { debug_apply_delay_ms: 2500 })).status).toBe(200);
    const write = exec(c, [{ sql: "INSERT INTO t (v) VALUES ('w')" }]);
    await sleep(300);
    const onMaster = await query(c, "SELECT v FROM t ORDER BY id", { replica: "master" });
    expect(onMaster.status, JSON.stringify(onMaster.body)).toBe(200);
    expect(values(onMaster)).toEqual(["w"]);
    // It answered only once W was acknowledged: nothing is waiting any more ...
    expect(await outstanding(c)).toBe(0);
    // ... so a strong read on a replica, started after it returned, sees W too.
    expectSeesOrRefuses(
      await query(c, "SELECT v FROM t ORDER BY id", { replica: "replica-1" }),
      "replica-1 after the master's read",
    );
    expect((await write).status).toBe(200);
  });

  it("a strong read that falls back to the master (no replica may serve) waits for the acknowledgement too", async () => {
    // A 2.5 s apply delay and a 500 ms lease: every lease is over before it is taken.
    const c = await setup("rb-fallback", { heartbeat_ms: 100, slow_replica_factor: 0 });
    expect((await patchTunables(c, { debug_apply_delay_ms: 2500 })).status).toBe(200);
    await sleep(700);
    const write = exec(c, [{ sql: "INSERT INTO t (v) VALUES ('w')" }]);
    await sleep(300);
    const read = await query(c, "SELECT v FROM t ORDER BY id");
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body.servedBy).toBe("master");
    expect(values(read)).toEqual(["w"]);
    expect(await outstanding(c)).toBe(0);
    expect((await write).status).toBe(200);
  });
});

describe("read barrier on replicas, 4 replicas", () => {
  it("a replica that applied W does not return it while another coherent replica with a lease lacks it", async () => {
    const c = await setup("rb-replica", {
      coherency_lease_ms: 10_000,
      heartbeat_ms: 100,
      slow_replica_factor: 0,
      debug_fault_injection: true,
    });
    await sleep(300);
    const slow = await call("POST", `/admin/clusters/${c}/replicas/replica-2/delay`, {
      body: { ms: 2500 },
    });
    expect(slow.status).toBe(200);
    const write = exec(c, [{ sql: "INSERT INTO t (v) VALUES ('w')" }]);
    await sleep(300);
    const fast = await query(c, "SELECT v FROM t ORDER BY id", { replica: "replica-1" });
    expect(fast.status, JSON.stringify(fast.body)).toBe(200);
    expect(values(fast)).toEqual(["w"]);
    expect(await outstanding(c)).toBe(0);
    expectSeesOrRefuses(
      await query(c, "SELECT v FROM t ORDER BY id", { replica: "replica-2" }),
      "replica-2 after replica-1's read",
    );
    expect((await write).status).toBe(200);
  });

  it("a commit answered COMMIT_TIMEOUT is served by no one while a late replica may still hold its lease; afterwards by everyone", async () => {
    // replica-2 takes 6 s per message. W misses its 100 ms ack deadline there, so
    // replica-2 is marked incoherent at once, but W may count as committed only
    // once the lease replica-2 holds has run out: until then replica-2 may serve a
    // state without W. The client gives up first (commit_timeout_ms = 100 ms).
    const c = await setup("rb-timeout", {
      coherency_lease_ms: 2_000,
      rep_timeout_ms: 100,
      commit_timeout_ms: 100,
      heartbeat_ms: 100,
      slow_replica_factor: 0,
      debug_fault_injection: true,
    });
    await sleep(300);
    const slow = await call("POST", `/admin/clusters/${c}/replicas/replica-2/delay`, {
      body: { ms: 6_000 },
    });
    expect(slow.status).toBe(200);
    expect(await leaseOf(c, "replica-2")).toBeGreaterThan(Date.now() + 1_000);
    const write = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('w')" }]);
    expect(write.status, JSON.stringify(write.body)).toBe(504);
    const timed = async (read: Promise<ApiResult<Rows>>) => {
      const answer = await read;
      return { answer, at: Date.now() };
    };
    const [fast, master] = await Promise.all([
      timed(query(c, "SELECT v FROM t ORDER BY id", { replica: "replica-1" })),
      timed(query(c, "SELECT v FROM t ORDER BY id", { replica: "master" })),
    ]);
    // The last lease granted to replica-2 (heartbeats sent after the delay began count).
    const leaseUntil = await leaseOf(c, "replica-2");
    for (const [name, { answer, at }] of [
      ["replica-1", fast],
      ["master", master],
    ] as const) {
      expect(answer.status, `${name}: ${JSON.stringify(answer.body)}`).toBe(200);
      expect(values(answer), name).toEqual(["w"]);
      expect(at, `${name} returned W while replica-2 could hold its lease`).toBeGreaterThanOrEqual(
        leaseUntil,
      );
    }
    // W has been returned: replica-2, which lacks it, must not serve the older state.
    expectSeesOrRefuses(
      await query(c, "SELECT v FROM t ORDER BY id", { replica: "replica-2" }),
      "replica-2 after W was read elsewhere",
    );
  });
});
