import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { nodeObjectName } from "../durable-objects/node-rpc";
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

type FaultStatus = {
  messages: Record<string, number>;
  injected: Record<string, number>;
};

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

const faults = async (c: string) =>
  ((await status(c)).body as unknown as { faults: FaultStatus }).faults;

const allCoherent = async (c: string) => {
  const s = await status(c);
  return s.body.replicas.every((r) => r.state === "coherent" && r.ackedLsn === s.body.master.lsn);
};

describe("fault routes, refused unless debug_fault_injection is on", () => {
  it("answers the message-fault and replica-crash routes with 403 FORBIDDEN while it is off", async () => {
    const c = await setup("faultsoff");
    const set = await call("POST", `/admin/clusters/${c}/faults`, { body: { drop: 0.5 } });
    expect(set.status).toBe(403);
    expect((set.body.error as { code: string }).code).toBe("FORBIDDEN");
    const crash = await call("POST", `/admin/clusters/${c}/replicas/replica-1/crash`);
    expect(crash.status).toBe(403);
    expect((await faults(c)).messages.drop).toBe(0);
  });

  it("validates the message-fault settings: probabilities 0..1, known fields only", async () => {
    const c = await setup("faultsbad", { debug_fault_injection: true });
    for (const body of [{ drop: 1.5 }, { delay: -0.1 }, { delayMs: 20_000 }, { jitter: 1 }]) {
      const res = await call("POST", `/admin/clusters/${c}/faults`, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((res.body.error as { code: string }).code).toBe("BAD_REQUEST");
    }
    const crash = await call("POST", `/admin/clusters/${c}/replicas/replica-9/crash`);
    expect(crash.status).toBe(404);
  });
});

describe("replica crash, 4 replicas", () => {
  it("a replica crashed partway through a batch loses that batch's transaction, restarts and catches up", async () => {
    const c = await setup("midbatch", { debug_fault_injection: true });
    const armed = await call("POST", `/admin/clusters/${c}/replicas/replica-2/crash`, {
      body: { midBatch: true },
    });
    expect(armed.status, JSON.stringify(armed.body)).toBe(202);
    // A fresh stub per look: a stub to an object that crashed stays broken.
    const ns = env.NODE;
    const isArmed = () =>
      runInDurableObject(ns.get(ns.idFromName(nodeObjectName(c, "replica-2"))), (instance) =>
        Reflect.get(
          Reflect.get(
            Reflect.get(instance as unknown as object, "role") as object,
            "fault",
          ) as object,
          "crashMidBatch",
        ),
      );
    expect(await isArmed()).toBe(true);
    // Several records in flight at once, so the batch that crashes carries more than one.
    const writes = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`w${i}`] }], `midbatch-${i}`),
      ),
    );
    expect(writes.map((w) => w.status)).toEqual(writes.map(() => 200));
    await waitUntil("every replica coherent and caught up", () => allCoherent(c));
    // The flag lives only in memory: it is gone because the object restarted.
    expect(await isArmed()).toBe(false);
    const v = await verify(c);
    expect(v.body.mismatches).toEqual([]);
    expect(v.body.agree).toBe(true);
    const read = await query(c, "SELECT COUNT(*) AS n FROM t", {
      replica: "replica-2",
      consistency: "any",
    });
    expect(read.body.rows).toEqual([{ n: 12 }]);
    expect((await faults(c)).injected.replicaCrash).toBe(1);
  });

  it("a replica crashed at once comes back and converges", async () => {
    const c = await setup("crashnow", { debug_fault_injection: true });
    const crash = await call("POST", `/admin/clusters/${c}/replicas/replica-3/crash`);
    expect(crash.status, JSON.stringify(crash.body)).toBe(202);
    for (let i = 0; i < 5; i++) {
      expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('x')" }])).status).toBe(200);
    }
    await waitUntil("every replica coherent and caught up", () => allCoherent(c));
    expect((await verify(c)).body.agree).toBe(true);
  });
});

describe("relay message faults, 4 replicas", () => {
  it("with messages dropped, delayed, duplicated and reordered, every write is acked once and the replicas converge", async () => {
    const c = await setup("msgfaults", {
      debug_fault_injection: true,
      rep_timeout_ms: 300,
      coherency_lease_ms: 200,
      heartbeat_ms: 50,
      coherency_rejoin_penalty_ms: 0,
    });
    const set = await call("POST", `/admin/clusters/${c}/faults`, {
      body: { seed: 11, drop: 0.15, delay: 0.2, delayMs: 30, duplicate: 0.2, reorder: 0.2 },
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    for (let round = 0; round < 8; round++) {
      const writes = await Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`r${round}-${i}`] }]),
        ),
      );
      expect(writes.map((w) => w.status)).toEqual([200, 200, 200, 200, 200]);
    }
    const during = await faults(c);
    expect(during.messages).toMatchObject({ seed: 11, drop: 0.15, delayMs: 30 });
    for (const kind of ["drop", "delay", "duplicate", "reorder"]) {
      expect(during.injected[kind], kind).toBeGreaterThan(0);
    }
    // Healing: `{}` sets every probability to 0.
    expect((await call("POST", `/admin/clusters/${c}/faults`, { body: {} })).status).toBe(200);
    await waitUntil("every replica coherent and caught up", () => allCoherent(c));
    const v = await verify(c);
    expect(v.body.mismatches).toEqual([]);
    const rows = await query(c, "SELECT COUNT(*) AS n FROM t");
    expect(rows.body.rows).toEqual([{ n: 40 }]);
  });
});

describe("master crash with deferred acks (debug_ack_delay_ms), 4 replicas", () => {
  it("the replicas report their position to the restarted master and are coherent again without new writes", async () => {
    const c = await setup("ackterm", {
      debug_fault_injection: true,
      debug_ack_delay_ms: 30,
      coherency_rejoin_penalty_ms: 0,
    });
    await new Promise((r) => setTimeout(r, 300));
    for (let i = 0; i < 5; i++) {
      const w = await exec(
        c,
        [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`a${i}`] }],
        `a${i}`,
      );
      expect(w.status).toBe(200);
    }
    const lsn = (await status(c)).body.master.lsn;
    expect((await call("POST", `/admin/clusters/${c}/master/crash`)).status).toBe(202);
    await waitUntil("the master answers again", async () => {
      try {
        return (await status(c)).status === 200;
      } catch {
        return false;
      }
    });
    await waitUntil(
      "every replica acked the log again",
      async () => {
        const s = await status(c);
        return s.body.replicas.every((r) => r.ackedLsn === lsn);
      },
      5_000,
    );
    // A retry of an acked write is answered from the saved result at once.
    const started = Date.now();
    const replay = await exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: ["a2"] }], "a2");
    expect(replay.status).toBe(200);
    expect(replay.body.replayed).toBe(true);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

describe("master crash under load", () => {
  it("resets the master before the route answers, failing the writes in flight with an unknown outcome", async () => {
    // Acks held 400 ms keep every write below in flight when the crash lands.
    const c = await setup("crashinflight", {
      debug_fault_injection: true,
      debug_ack_delay_ms: 400,
    });
    await new Promise((r) => setTimeout(r, 300));
    const epochBefore = ((await status(c)).body.master as unknown as { epoch: number }).epoch;
    const writes = Array.from({ length: 8 }, (_, i) =>
      exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`w${i}`] }], `w${i}`),
    );
    await new Promise((r) => setTimeout(r, 100));
    const crash = await call("POST", `/admin/clusters/${c}/master/crash`);
    expect(crash.status).toBe(202);
    expect(crash.body).toEqual({ crashed: true });
    // The next call already reaches the restarted master.
    const epochAfter = ((await status(c)).body.master as unknown as { epoch: number }).epoch;
    expect(epochAfter).toBeGreaterThan(epochBefore);
    const answers = await Promise.all(writes);
    for (const answer of answers) {
      expect(answer.status, JSON.stringify(answer.body)).toBe(503);
      expect((answer.body.error as { code: string }).code).toBe("UNAVAILABLE");
    }
    // They had committed and were waiting for acks: each resend (same key) is
    // answered from the result the old master saved, not executed again.
    for (let i = 0; i < 8; i++) {
      const retry = await exec(
        c,
        [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`w${i}`] }],
        `w${i}`,
      );
      expect(retry.status).toBe(200);
      expect(retry.body.replayed).toBe(true);
    }
    const rows = await query(c, "SELECT COUNT(*) AS n FROM t");
    expect(rows.body.rows).toEqual([{ n: 8 }]);
  });
});

describe("rejoin with deferred acks (debug_ack_delay_ms), 4 replicas", () => {
  it("a replica that caught up during its rejoin penalty becomes coherent when the penalty ends, without new writes", async () => {
    const penaltyMs = 1500;
    const c = await setup("rejoinidle", {
      debug_fault_injection: true,
      debug_ack_delay_ms: 30,
      rep_timeout_ms: 200,
      coherency_lease_ms: 200,
      heartbeat_ms: 50,
      coherency_rejoin_penalty_ms: penaltyMs,
    });
    await new Promise((r) => setTimeout(r, 300));
    expect((await call("POST", `/admin/clusters/${c}/replicas/replica-2/stop`)).status).toBe(200);
    // The first write waits rep_timeout_ms for replica-2 and marks it: its answer is
    // the latest the penalty can have started (the next four may be slow on a busy machine).
    expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('x')" }])).status).toBe(200);
    const demoted = Date.now();
    for (let i = 0; i < 4; i++) {
      expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('x')" }])).status).toBe(200);
    }
    expect((await call("POST", `/admin/clusters/${c}/replicas/replica-2/start`)).status).toBe(200);
    const lsn = (await status(c)).body.master.lsn;
    const replica2 = async () => (await status(c)).body.replicas.find((r) => r.id === "replica-2");
    // It catches up at once, but the penalty keeps it out of the wait sets for now.
    await waitUntil("replica-2 caught up", async () => (await replica2())?.ackedLsn === lsn);
    expect((await replica2())?.state).toBe("catching-up");
    await waitUntil(
      "replica-2 coherent",
      async () => (await replica2())?.state === "coherent",
      5_000,
    );
    expect(Date.now() - demoted).toBeGreaterThanOrEqual(penaltyMs - 400);
  });
});

describe("lost acks with deferred acks (debug_ack_delay_ms), 4 replicas", () => {
  it("an ack lost with a reply is sent again, so every replica reaches the master's LSN without new writes", async () => {
    const c = await setup("lostack", {
      debug_fault_injection: true,
      debug_ack_delay_ms: 30,
      rep_timeout_ms: 200,
      coherency_lease_ms: 200,
      heartbeat_ms: 50,
      coherency_rejoin_penalty_ms: 0,
    });
    await new Promise((r) => setTimeout(r, 300));
    // Every message is delivered twice for a while; the copy's reply goes nowhere, and so
    // does an ack that rides on it.
    const lossy = await call("POST", `/admin/clusters/${c}/faults`, {
      body: { seed: 3, duplicate: 1, delayMs: 40 },
    });
    expect(lossy.status).toBe(200);
    const writes = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`l${i}`] }]),
      ),
    );
    expect(writes.map((w) => w.status)).toEqual([200, 200, 200, 200]);
    await new Promise((r) => setTimeout(r, 300));
    expect((await call("POST", `/admin/clusters/${c}/faults`, { body: {} })).status).toBe(200);
    const lsn = (await status(c)).body.master.lsn;
    await waitUntil(
      "every replica acked the master's LSN and is coherent",
      async () =>
        (await status(c)).body.replicas.every((r) => r.ackedLsn === lsn && r.state === "coherent"),
      5_000,
    );
  });
});
