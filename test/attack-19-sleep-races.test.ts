/**
 * Attacks on when the master sleeps (scale to zero) that held; kept as
 * regression tests.
 *
 * - idle_after_ms 1 and heartbeat_ms 5: the master falls asleep between
 *   almost every two requests, so writes and strong reads race the moment it
 *   sleeps. Every acknowledged write is on every coherent replica when it is
 *   answered, and every strong read (on the master, or on a replica through a
 *   lease asked for on demand) sees every write acknowledged before it began.
 * - It never sleeps while a commit waits for acks (held acks), nor, under
 *   sync_mode quorum or none, while a replica has not acked its LSN.
 */
import { describe, expect, it } from "vitest";
import { call, exec, freshCluster, patchTunables, query, status, waitUntil } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Idle {
  asleep: boolean;
  awakeBecause: string | null;
  sleeps: number;
  wakes: number;
}
async function snap(c: string) {
  const s = await status(c);
  const master = s.body.master as unknown as {
    lsn: number;
    idle: Idle;
    waiter: { outstanding: number };
  };
  return { master, replicas: s.body.replicas };
}

async function cluster(prefix: string, tunables: Record<string, unknown>) {
  const c = freshCluster(prefix);
  const made = await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)" }]);
  expect(made.status).toBe(200);
  const tuned = await patchTunables(c, tunables);
  expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
  return c;
}

const NODES = ["master", "replica-1", "replica-2", "replica-3", "replica-4"];

describe("writes and strong reads racing the sleep (idle_after_ms 1)", () => {
  it("every acknowledged write is on every coherent replica and seen by every later strong read", async () => {
    const c = await cluster("att19-race", {
      idle_after_ms: 1,
      heartbeat_ms: 5,
      coherency_lease_ms: 60,
      lease_guard_ms: 5,
    });
    let acked = 0;
    let ackedLsn = 0;
    const stale: string[] = [];
    for (let i = 1; i <= 30; i++) {
      await sleep(i % 3 === 0 ? 80 : i % 3); // sometimes long enough for every lease to run out
      const wrote = await exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [i] }]);
      expect(wrote.status, JSON.stringify(wrote.body)).toBe(200);
      acked = i;
      ackedLsn = Math.max(ackedLsn, Number((wrote.body as { lsn?: number }).lsn ?? 0));
      // Full sync: every coherent replica has it now.
      const s = await snap(c);
      for (const r of s.replicas) {
        if (r.state === "coherent") expect(r.ackedLsn, r.id).toBeGreaterThanOrEqual(ackedLsn);
      }
      const node = NODES[i % NODES.length] as string;
      const read = await query(c, "SELECT count(*) AS n FROM t", {
        consistency: "strong",
        replica: node,
      });
      if (read.status === 200) {
        if (Number(read.body.rows[0]?.n) < acked)
          stale.push(`${node}: ${read.body.rows[0]?.n} < ${acked}`);
      } else {
        // A pinned replica may refuse (503), never answer stale.
        expect(read.status, JSON.stringify(read.body)).toBe(503);
      }
    }
    expect(stale).toEqual([]);
    const s = await snap(c);
    // The races did happen: it slept and woke again and again.
    expect(s.master.idle.sleeps).toBeGreaterThan(5);
    expect(s.master.idle.wakes).toBeGreaterThan(5);
  });
});

describe("it stays awake while there is something to do", () => {
  it("never while a commit waits for acks", async () => {
    const c = await cluster("att19-held", {
      idle_after_ms: 50,
      heartbeat_ms: 10,
      debug_ack_delay_ms: 1_500,
    });
    const write = exec(c, [{ sql: "INSERT INTO t (v) VALUES (1)" }]);
    const seen: string[] = [];
    const until = Date.now() + 1_200;
    while (Date.now() < until) {
      const s = await snap(c);
      if (s.master.waiter.outstanding > 0 && s.master.idle.asleep)
        seen.push("asleep with a commit waiting");
      await sleep(50);
    }
    expect((await write).status).toBe(200);
    expect(seen).toEqual([]);
  });

  it.each(["quorum", "none"])(
    "never under sync_mode %s while a replica has not acked the master's LSN",
    async (mode) => {
      const c = await cluster(`att19-mode-${mode}`, {
        idle_after_ms: 50,
        heartbeat_ms: 10,
        debug_fault_injection: true,
      });
      // sync_mode none needs durable_lsns off.
      const switched = await patchTunables(
        c,
        mode === "none" ? { sync_mode: mode, durable_lsns: false } : { sync_mode: mode },
      );
      expect(switched.status, JSON.stringify(switched.body)).toBe(200);
      const slowed = await call("POST", `/admin/clusters/${c}/replicas/replica-3/delay`, {
        body: { ms: 700 },
      });
      expect(slowed.status, JSON.stringify(slowed.body)).toBe(200);
      const wrote = await exec(c, [{ sql: "INSERT INTO t (v) VALUES (1)" }]);
      expect(wrote.status).toBe(200);
      const bad: string[] = [];
      const until = Date.now() + 1_500;
      while (Date.now() < until) {
        const s = await snap(c);
        const lagging = s.replicas.filter((r) => r.ackedLsn < s.master.lsn).map((r) => r.id);
        if (s.master.idle.asleep && lagging.length > 0) bad.push(`asleep while ${lagging} lag`);
        await sleep(40);
      }
      expect(bad).toEqual([]);
      await call("POST", `/admin/clusters/${c}/replicas/replica-3/delay`, { body: { ms: 0 } });
      // And it does fall asleep once every replica is there.
      await waitUntil(
        "the master to sleep",
        async () => (await snap(c)).master.idle.asleep,
        10_000,
      );
      const s = await snap(c);
      for (const r of s.replicas) expect(r.ackedLsn, r.id).toBe(s.master.lsn);
    },
  );
});
