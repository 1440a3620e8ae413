/**
 * Scale to zero: a quiet cluster's master stops calling its replicas and
 * clears its alarm within idle_after_ms and a margin, and a write and strong
 * reads afterwards (on the master, and on replicas, which ask for a lease)
 * behave as on a warm cluster: they see every acknowledged write.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { nodeObjectName } from "../durable-objects/node-rpc";
import {
  ADMIN,
  call,
  exec,
  freshCluster,
  patchTunables,
  query,
  status,
  waitUntil,
} from "./helpers";

interface Row {
  id: string;
  state: string;
  ackedLsn: number;
  calls: number;
}
interface Idle {
  asleep: boolean;
  quietMs: number;
  awakeBecause: string | null;
  sleeps: number;
  wakes: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function snapshot(c: string) {
  const s = await status(c);
  const master = s.body.master as unknown as { lsn: number; idle: Idle };
  return { idle: master.idle, lsn: master.lsn, replicas: s.body.replicas as unknown as Row[] };
}

async function masterAlarm(c: string): Promise<number | null> {
  const ns = env.NODE as unknown as DurableObjectNamespace;
  const stub = ns.get(ns.idFromName(nodeObjectName(c, "node-0")));
  return runInDurableObject(stub, (_, state) => state.storage.getAlarm());
}

const IDLE_MS = 400;

/** A cluster with a table and one write, tuned to fall asleep quickly. */
async function quietCluster(prefix: string, extra: Record<string, unknown> = {}) {
  const c = freshCluster(prefix);
  const made = await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }]);
  expect(made.status).toBe(200);
  const tuned = await patchTunables(c, { idle_after_ms: IDLE_MS, heartbeat_ms: 50, ...extra });
  expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
  expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('a')" }])).status).toBe(200);
  return c;
}

async function asleep(c: string) {
  const started = Date.now();
  await waitUntil("the master to sleep", async () => (await snapshot(c)).idle.asleep, 10_000);
  return Date.now() - started;
}

describe("an idle cluster sleeps", () => {
  it.each([50, 200])(
    "stops calling its replicas and clears its alarm within idle_after_ms plus a margin (heartbeat_ms %i)",
    async (heartbeatMs) => {
      const c = await quietCluster("idle", { heartbeat_ms: heartbeatMs });
      const tookMs = await asleep(c);
      // The heartbeat job looks every heartbeat_ms / 2, and the replicas acked first.
      expect(tookMs).toBeLessThan(IDLE_MS + 2_000);
      const before = await snapshot(c);
      expect(before.idle.awakeBecause).toBeNull();
      for (const r of before.replicas) {
        expect(r.state).toBe("coherent");
        expect(r.ackedLsn).toBe(before.lsn);
      }
      expect(await masterAlarm(c)).toBeNull();
      const metrics = await exports.default.fetch(
        new Request(`http://cluster.test/metrics?cluster=${c}`, {
          headers: { authorization: `Bearer ${ADMIN}` },
        }),
      );
      expect(await metrics.text()).toContain(`dosql_master_asleep{cluster="${c}"} 1`);
      // Five to twenty heartbeat periods later, not one call more has gone to any replica.
      await sleep(1_000);
      const after = await snapshot(c);
      expect(after.idle.asleep).toBe(true);
      expect(after.replicas.map((r) => r.calls)).toEqual(before.replicas.map((r) => r.calls));
      expect(await masterAlarm(c)).toBeNull();
    },
  );

  it("stays awake while a replica lags, and says why", async () => {
    const c = await quietCluster("idle-stopped", {
      debug_fault_injection: true,
      rep_timeout_ms: 300,
    });
    expect(
      (await call("POST", `/admin/clusters/${c}/replicas/replica-2/stop`, { body: {} })).status,
    ).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('b')" }])).status).toBe(200);
    await sleep(IDLE_MS + 800);
    const s = await snapshot(c);
    expect(s.idle.asleep).toBe(false);
    expect(s.idle.awakeBecause).toMatch(/replica-2/);
    expect(await masterAlarm(c)).not.toBeNull();
  });

  it("never sleeps with master_failover_ms on: the replicas must keep hearing the master", async () => {
    const c = await quietCluster("idle-failover", { master_failover_ms: 5_000 });
    await sleep(IDLE_MS + 800);
    const s = await snapshot(c);
    expect(s.idle.asleep).toBe(false);
    expect(s.idle.awakeBecause).toMatch(/master_failover_ms/);
  });

  it("never sleeps with idle_after_ms 0", async () => {
    const c = await quietCluster("idle-off", { idle_after_ms: 0 });
    await sleep(1_000);
    expect((await snapshot(c)).idle.asleep).toBe(false);
  });
});

describe("waking", () => {
  it("a write wakes it and is acknowledged by every replica, as on a warm cluster", async () => {
    const c = await quietCluster("wake-write");
    await asleep(c);
    const wrote = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('after')" }]);
    expect(wrote.status, JSON.stringify(wrote.body)).toBe(200);
    const s = await snapshot(c);
    expect(s.idle.asleep).toBe(false);
    expect(s.idle.wakes).toBe(1);
    // Full sync: the answer came after every coherent replica acked it.
    for (const r of s.replicas) expect(r.ackedLsn).toBe(s.lsn);
    expect(await masterAlarm(c)).not.toBeNull();
    // And it falls asleep again once quiet.
    await asleep(c);
    expect((await snapshot(c)).idle.sleeps).toBe(2);
  });

  it("a strong read on a replica asks for a lease and is served there, seeing the last write", async () => {
    const c = await quietCluster("wake-replica");
    await asleep(c);
    // Long enough for every lease granted before the sleep to have run out.
    await sleep(600);
    for (const replica of ["replica-1", "replica-2", "replica-3"]) {
      const read = await query(c, "SELECT count(*) AS n FROM t", {
        consistency: "strong",
        replica,
      });
      expect(read.status, JSON.stringify(read.body)).toBe(200);
      expect(read.body.servedBy).toBe(replica);
      expect(read.body.rows[0]?.n).toBe(1);
    }
    // The lease request woke the master: later reads ride on heartbeats again.
    expect((await snapshot(c)).idle.asleep).toBe(false);
  });

  it("a strong read on the master after a quiet spell sees the last write", async () => {
    const c = await quietCluster("wake-master");
    await asleep(c);
    const read = await query(c, "SELECT v FROM t", { consistency: "strong", replica: "master" });
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body.rows.map((r) => r.v)).toEqual(["a"]);
  });

  it("a replica that is not coherent gets no lease: its strong read goes to the master", async () => {
    const c = await quietCluster("wake-stopped", {
      debug_fault_injection: true,
      rep_timeout_ms: 300,
    });
    await asleep(c);
    await sleep(600);
    // Cut off, the replica is marked incoherent once a write needs it.
    expect(
      (await call("POST", `/admin/clusters/${c}/replicas/replica-2/disconnect`, { body: {} }))
        .status,
    ).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('b')" }])).status).toBe(200);
    const read = await query(c, "SELECT count(*) AS n FROM t", {
      consistency: "strong",
      replica: "replica-2",
    });
    // A read pinned to a replica that may not serve is refused, not answered stale.
    expect(read.status, JSON.stringify(read.body)).toBe(503);
    const replicas = (await snapshot(c)).replicas;
    expect(replicas.find((r) => r.id === "replica-2")?.state).not.toBe("coherent");
  });
});

describe("silence during a sleep is the master's, not the replicas'", () => {
  it("a replica failing its first call after a wake is not marked unreachable at once", async () => {
    const c = await quietCluster("wake-unreachable", {
      debug_fault_injection: true,
      rep_timeout_ms: 1_500,
      commit_timeout_ms: 10_000,
    });
    await asleep(c);
    // Quiet for longer than rep_timeout_ms: nobody has heard from any replica since.
    await sleep(2_000);
    const stopped = await call("POST", `/admin/clusters/${c}/replicas/replica-2/stop`, {
      body: {},
    });
    expect(stopped.status).toBe(200);
    const write = exec(c, [{ sql: "INSERT INTO t (v) VALUES ('b')" }]);
    await sleep(300);
    // Its calls fail from the wake on, but it has been silent for 300 ms, not 2 s.
    const during = (await snapshot(c)).replicas.find((r) => r.id === "replica-2");
    expect(during?.state).toBe("coherent");
    // rep_timeout_ms after the wake it is marked, and the write is answered without it.
    expect((await write).status).toBe(200);
    const after = (await snapshot(c)).replicas.find((r) => r.id === "replica-2");
    expect(after?.state).toBe("incoherent");
  });
});

describe("starting is not activity", () => {
  it("a master restarted without a request asking anything of it sleeps as soon as its replicas answer", async () => {
    const c = await quietCluster("restart-asleep", {
      idle_after_ms: 5_000,
      debug_fault_injection: true,
    });
    // The crash resets it (as an eviction would); the status call below starts it again.
    const crashed = await call("POST", `/admin/clusters/${c}/master/crash`, { body: {} });
    expect(crashed.status).toBe(202);
    const started = Date.now();
    await waitUntil("the restarted master to sleep", async () => (await snapshot(c)).idle.asleep);
    // Well before idle_after_ms: its start did not count as a request.
    expect(Date.now() - started).toBeLessThan(2_500);
    // And it wakes for the next write, as ever.
    expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('b')" }])).status).toBe(200);
    expect((await snapshot(c)).idle.wakes).toBe(1);
  });
});
