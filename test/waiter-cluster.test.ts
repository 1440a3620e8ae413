/**
 * The waiter through the front door: every case run once with the hand-off on
 * and once inline must give the client the same outcome (the seed's "test
 * comparing each case with the inline wait").
 */
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

interface WaiterStatus {
  outstanding: number;
  handedOffNow: number;
  handedOff: number;
  inlineWaits: { off: number; queueFull: number; notPlain: number };
  noWait: number;
  passes: number;
}

async function setup(prefix: string, tunables: Record<string, unknown>) {
  const c = freshCluster(prefix);
  expect((await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status).toBe(
    200,
  );
  if (Object.keys(tunables).length > 0) {
    const res = await patchTunables(c, tunables);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
  return c;
}

async function waiter(c: string): Promise<WaiterStatus> {
  return (await status(c)).body.master.waiter as unknown as WaiterStatus;
}

const stop = (c: string, id: string) => call("POST", `/admin/clusters/${c}/replicas/${id}/stop`);
const start = (c: string, id: string) => call("POST", `/admin/clusters/${c}/replicas/${id}/start`);

describe.each([
  { mode: "waiter", asyncDistCommit: true },
  { mode: "inline", asyncDistCommit: false },
])("4 replicas, $mode", ({ mode, asyncDistCommit }) => {
  it("answers a commit once every replica acked it", async () => {
    const c = await setup(`ok-${mode}`, { async_dist_commit: asyncDistCommit });
    const writes = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`w${i}`] }]),
      ),
    );
    expect(writes.map((w) => w.status)).toEqual(Array(20).fill(200));
    const s = await waiter(c);
    if (asyncDistCommit) {
      expect(s.handedOff).toBe(20);
      expect(s.inlineWaits.off).toBe(0);
    } else {
      expect(s.handedOff).toBe(0);
      expect(s.inlineWaits.off).toBe(20);
    }
    for (const replica of ["replica-1", "replica-2", "replica-3", "replica-4"]) {
      const r = await query(c, "SELECT COUNT(*) AS n FROM t", { replica });
      expect(r.body.rows).toEqual([{ n: 20 }]);
    }
  });

  it("answers NOT_DURABLE when a minority acked by the deadline, and the retry succeeds once durable", async () => {
    const c = await setup(`nd-${mode}`, {
      async_dist_commit: asyncDistCommit,
      durable_lsns: true,
      rep_timeout_ms: 300,
      coherency_lease_ms: 100,
      heartbeat_ms: 50,
      debug_fault_injection: true,
    });
    for (const id of ["replica-1", "replica-2", "replica-3"])
      expect((await stop(c, id)).status).toBe(200);
    const body = [{ sql: "INSERT INTO t (v) VALUES ('durable?')" }];
    const first = await exec(c, body, `nd-${mode}`);
    expect(first.status).toBe(503);
    expect(first.body).toMatchObject({ error: { code: "NOT_DURABLE" } });
    const replicas = (await status(c)).body.replicas;
    expect(replicas.filter((r) => r.state !== "coherent").map((r) => r.id)).toEqual([
      "replica-1",
      "replica-2",
      "replica-3",
    ]);
    for (const id of ["replica-1", "replica-2", "replica-3"])
      expect((await start(c, id)).status).toBe(200);
    let retry = await exec(c, body, `nd-${mode}`);
    await waitUntil("the retry is answered", async () => {
      retry = await exec(c, body, `nd-${mode}`);
      return retry.status === 200;
    });
    expect(retry.body).toMatchObject({ replayed: true });
    expect((await query(c, "SELECT COUNT(*) AS n FROM t")).body.rows).toEqual([{ n: 1 }]);
  });

  it("drops a replica that misses the deadline, marks it incoherent, and answers the commit", async () => {
    const c = await setup(`to-${mode}`, {
      async_dist_commit: asyncDistCommit,
      rep_timeout_ms: 300,
      coherency_lease_ms: 100,
      heartbeat_ms: 50,
      debug_fault_injection: true,
    });
    expect((await stop(c, "replica-2")).status).toBe(200);
    const started = Date.now();
    const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('late')" }]);
    expect(w.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    const r2 = (await status(c)).body.replicas.find((r) => r.id === "replica-2");
    expect(r2?.state).toBe("incoherent");
    expect(r2?.incoherentReason).toMatch(/ack-timeout|unreachable/);
  });
});

describe("4 replicas, waiter cap", () => {
  it("with a cap of 2, ten concurrent commits overflow into inline waits and all succeed", async () => {
    const c = await setup("cap", {
      async_dist_commit_max_outstanding: 2,
      debug_ack_delay_ms: 150,
    });
    await new Promise((r) => setTimeout(r, 300));
    const writes = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`c${i}`] }]),
      ),
    );
    expect(writes.map((w) => w.status)).toEqual(Array(10).fill(200));
    const s = await waiter(c);
    expect(s.inlineWaits.queueFull).toBeGreaterThan(0);
    expect(s.handedOff + s.inlineWaits.queueFull).toBe(10);
    expect(s.handedOffNow).toBe(0);
    expect(s.outstanding).toBe(0);
  });

  it("a response past waiter_max_held_bytes waits inline, and a replay past it is turned away, not held", async () => {
    const c = await setup("held-bytes", { waiter_max_held_bytes: 1_048_576 });
    const before = await waiter(c);
    // Replicas sleep 1.5 s per message: the commit below waits that long for its acks.
    expect((await patchTunables(c, { debug_apply_delay_ms: 1500 })).status).toBe(200);
    // RETURNING a 1.2 MB value makes a response the waiter may not hold.
    const big = "INSERT INTO t (v) SELECT hex(zeroblob(600000)) RETURNING v";
    const first = exec(c, [{ sql: big }], "held-big");
    await new Promise((r) => setTimeout(r, 300));
    const replay = await exec(c, [{ sql: big }], "held-big");
    expect(replay.status, JSON.stringify(replay.body).slice(0, 200)).toBe(503);
    expect((replay.body.error as { code: string }).code).toBe("UNAVAILABLE");
    expect((await first).status).toBe(200);
    expect((await patchTunables(c, { debug_apply_delay_ms: 0 })).status).toBe(200);
    const after = await waiter(c);
    expect(after.inlineWaits.queueFull).toBe(before.inlineWaits.queueFull + 1);
    expect(after.handedOff).toBe(before.handedOff);
    // Once it is acknowledged, the same replay is answered at once from its saved result.
    const later = await exec(c, [{ sql: big }], "held-big");
    expect(later.status).toBe(200);
    expect(later.body.replayed).toBe(true);
  }, 30_000);

  it("DDL waits inline as not plain", async () => {
    const c = await setup("ddl", {});
    const before = await waiter(c);
    expect((await exec(c, [{ sql: "CREATE TABLE u (x)" }])).status).toBe(200);
    const after = await waiter(c);
    expect(after.inlineWaits.notPlain).toBe(before.inlineWaits.notPlain + 1);
    expect(after.handedOff).toBe(before.handedOff);
  });
});

describe("4 replicas, sync modes", () => {
  it("quorum answers once sync_quorum replicas acked, without waiting for the stopped ones", async () => {
    const c = await setup("quorum", {
      sync_mode: "quorum",
      sync_quorum: 2,
      rep_timeout_ms: 5000,
      debug_fault_injection: true,
    });
    expect((await stop(c, "replica-3")).status).toBe(200);
    expect((await stop(c, "replica-4")).status).toBe(200);
    const started = Date.now();
    const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('q')" }]);
    expect(w.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2500);
    // Replicas hold no lease outside full sync: strong reads go to the master.
    const pinned = await query(c, "SELECT COUNT(*) AS n FROM t", { replica: "replica-1" });
    expect(pinned.status).toBe(503);
    const strong = await query(c, "SELECT COUNT(*) AS n FROM t");
    expect(strong.body).toMatchObject({ servedBy: "master", rows: [{ n: 1 }] });
  });

  it("none answers after the local commit even with every replica stopped", async () => {
    const c = await setup("none", {
      sync_mode: "none",
      durable_lsns: false,
      rep_timeout_ms: 5000,
      debug_fault_injection: true,
    });
    for (const id of ["replica-1", "replica-2", "replica-3", "replica-4"]) {
      expect((await stop(c, id)).status).toBe(200);
    }
    const started = Date.now();
    const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('n')" }]);
    expect(w.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2500);
    expect((await waiter(c)).noWait).toBe(1);
  });

  it("back to full sync, replicas that missed acknowledged writes rejoin only after catching up", async () => {
    const c = await setup("modes", {
      sync_mode: "none",
      durable_lsns: false,
      coherency_rejoin_penalty_ms: 0,
      debug_fault_injection: true,
    });
    expect((await stop(c, "replica-1")).status).toBe(200);
    for (let i = 0; i < 5; i++) {
      expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('x')" }])).status).toBe(200);
    }
    expect((await patchTunables(c, { sync_mode: "full" })).status).toBe(200);
    const r1 = (await status(c)).body.replicas.find((r) => r.id === "replica-1");
    expect(r1?.state).not.toBe("coherent");
    expect((await start(c, "replica-1")).status).toBe(200);
    await waitUntil("replica-1 coherent", async () =>
      (await status(c)).body.replicas.every((r) => r.state === "coherent"),
    );
    // Its lease comes with the next message after it rejoined.
    let read = await query(c, "SELECT COUNT(*) AS n FROM t", { replica: "replica-1" });
    await waitUntil("replica-1 serves strong reads", async () => {
      read = await query(c, "SELECT COUNT(*) AS n FROM t", { replica: "replica-1" });
      return read.status === 200;
    });
    expect(read.body.rows).toEqual([{ n: 5 }]);
  });
});

describe("4 replicas, slow-replica rule", () => {
  it("marks a replica much slower than the second-worst incoherent as slow, and 0 turns the rule off", async () => {
    const c = await setup("slow", { debug_fault_injection: true, slow_replica_factor: 0 });
    const delay = (ms: number) =>
      call("POST", `/admin/clusters/${c}/replicas/replica-2/delay`, { body: { ms } });
    expect((await delay(80)).status).toBe(200);
    const writeSome = async (n: number) => {
      for (let i = 0; i < n; i++) {
        expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('s')" }])).status).toBe(200);
      }
    };
    await writeSome(25);
    await new Promise((r) => setTimeout(r, 1200));
    // With the rule off, the slow replica stays in the wait sets.
    expect((await status(c)).body.replicas.every((r) => r.state === "coherent")).toBe(true);

    expect((await patchTunables(c, { slow_replica_factor: 2 })).status).toBe(200);
    await waitUntil("replica-2 marked slow", async () => {
      await writeSome(2);
      const r2 = (await status(c)).body.replicas.find((r) => r.id === "replica-2");
      return r2?.state !== "coherent" && r2?.incoherentReason === "slow";
    });
    const others = (await status(c)).body.replicas.filter((r) => r.id !== "replica-2");
    expect(others.every((r) => r.state === "coherent")).toBe(true);
    // Once the lease it held runs out (until then it may serve strong reads, so
    // commits still wait for it), the slow node leaves the wait sets and commits
    // no longer wait for its 80 ms.
    const lease = (await call("GET", `/admin/clusters/${c}/tunables`)).body as {
      coherency_lease_ms: { value: number };
    };
    await new Promise((r) => setTimeout(r, lease.coherency_lease_ms.value + 50));
    const started = Date.now();
    await writeSome(5);
    expect(Date.now() - started).toBeLessThan(5 * 80);
    expect((await delay(0)).status).toBe(200);
  });
});

describe("debug_ack_delay_ms under steady load, 4 replicas", () => {
  it("holds every ack for the delay, and the acks ride back on the relays' messages", async () => {
    const c = await setup("ackride", { debug_ack_delay_ms: 100 });
    // The first message after the change carries it; give the relays a heartbeat.
    await new Promise((r) => setTimeout(r, 400));
    interface Row {
      ackRttCount: number;
      ackDelayTotalMs: number;
      ackCalls: number;
      calls: number;
    }
    const replicas = async () => (await status(c)).body.replicas as unknown as Row[];
    const before = await replicas();
    const latencies: number[] = [];
    const until = Date.now() + 1_500;
    const client = async (n: number) => {
      for (let i = 0; Date.now() < until; i++) {
        const started = Date.now();
        const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`c${n}-${i}`] }]);
        expect(w.status).toBe(200);
        latencies.push(Date.now() - started);
      }
    };
    await Promise.all(Array.from({ length: 16 }, (_, n) => client(n)));
    const after = await replicas();
    const delta = (k: keyof Row) =>
      after.reduce((sum, r) => sum + r[k], 0) - before.reduce((sum, r) => sum + r[k], 0);
    // Every commit waited for the delayed acks.
    expect(Math.min(...latencies)).toBeGreaterThanOrEqual(95);
    expect(delta("ackDelayTotalMs") / delta("ackRttCount")).toBeGreaterThanOrEqual(99);
    // How many due acks ride back on the relay's messages rather than going as calls
    // of their own is a speed property and depends on the machine's load (11 of 72,
    // 31 of 188 and 39 of 71 in three runs); it is measured in the benchmark, not here.
    expect(delta("ackRttCount")).toBeGreaterThan(20);
  });
});

describe("relay_calls_in_flight, 4 replicas", () => {
  it("fewer calls in flight carry the same burst of commits in fewer, larger batches", async () => {
    const callsFor = async (callsInFlight: number) => {
      const c = await setup(`calls${callsInFlight}`, { relay_calls_in_flight: callsInFlight });
      const calls = async () =>
        ((await status(c)).body.replicas as unknown as { calls: number }[]).reduce(
          (sum, r) => sum + r.calls,
          0,
        );
      const before = await calls();
      const writes = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`b${i}`] }]),
        ),
      );
      expect(writes.every((w) => w.status === 200)).toBe(true);
      expect((await verify(c)).body.agree).toBe(true);
      return (await calls()) - before;
    };
    const one = await callsFor(1);
    const many = await callsFor(32);
    expect(one * 2).toBeLessThan(many);
  });
});

describe("held acks at the end of a burst, 4 replicas", () => {
  it("a commit waiting on held acks is answered about the ack delay later, with no other traffic", async () => {
    const c = await setup("lone", { debug_ack_delay_ms: 100 });
    await new Promise((r) => setTimeout(r, 400));
    const waits: number[] = [];
    for (let i = 0; i < 8; i++) {
      // A burst of four, then nothing: the last acks must be fetched without new commits.
      const started = Date.now();
      const writes = await Promise.all(
        Array.from({ length: 4 }, (_, n) =>
          exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`lone${i}-${n}`] }]),
        ),
      );
      expect(writes.every((w) => w.status === 200)).toBe(true);
      waits.push(Date.now() - started);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(95);
    // Waiting for the alarm backstop instead takes over 1.1 s (it is set at least
    // 1 s ahead); a busy machine has stretched a good burst to 785 ms.
    expect(Math.max(...waits)).toBeLessThan(1_000);
  });
});
