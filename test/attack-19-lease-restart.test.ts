/**
 * Attack: waking a replica's strong read after the replica itself was reset
 * (evicted, crashed) while the cluster slept, in a cluster whose master is
 * no longer node-0.
 *
 * A replica asks its lease of `masterId`, which lives in memory only and
 * starts as node-0 (durable-objects/replica/role.ts). While the master sleeps
 * it sends nothing, so a replica that restarted meanwhile asks node-0, a
 * replica now, which refuses (NOT_MASTER): the read pinned there gets 503 for
 * as long as the cluster sleeps, although the replica is coherent and at the
 * master's LSN. Promise 2: a strong read on a replica that finds no lease
 * asks the master for one.
 *
 * Also held (regression): the same without the promotion, and a replica in
 * the wrong term or removed is refused a lease on demand.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { LeaseGrant } from "../core/protocol";
import { nodeStub } from "../durable-objects/node-rpc";
import { call, exec, freshCluster, patchTunables, query, untilAsleep } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function quiet(c: string) {
  await untilAsleep(c);
  // Every lease granted before the sleep has run out.
  await sleep(700);
}

async function cluster(prefix: string, promote: boolean) {
  const c = freshCluster(prefix);
  expect((await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status).toBe(
    200,
  );
  const tuned = await patchTunables(c, {
    idle_after_ms: 300,
    heartbeat_ms: 50,
    debug_fault_injection: true,
  });
  expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
  if (promote) {
    const promoted = await call("POST", `/admin/clusters/${c}/promote`, {
      body: { replica: "replica-1" },
    });
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
  }
  expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('a')" }])).status).toBe(200);
  return c;
}

async function crashReplica(c: string, id: string) {
  const crashed = await call("POST", `/admin/clusters/${c}/replicas/${id}/crash`, { body: {} });
  expect(crashed.status, JSON.stringify(crashed.body)).toBe(202);
  await sleep(100);
}

describe("a replica reset while the cluster sleeps", () => {
  it("serves a pinned strong read through a lease on demand (master is node-0)", async () => {
    const c = await cluster("att19-lease-n0", false);
    await quiet(c);
    await crashReplica(c, "replica-2");
    const read = await query(c, "SELECT count(*) AS n FROM t", {
      consistency: "strong",
      replica: "replica-2",
    });
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body.servedBy).toBe("replica-2");
    expect(read.body.rows[0]?.n).toBe(1);
  });

  it("serves a pinned strong read through a lease on demand after a handover", async () => {
    const c = await cluster("att19-lease-ho", true);
    await quiet(c);
    // Before the reset the replica knows its master and is served as promised.
    const warm = await query(c, "SELECT count(*) AS n FROM t", {
      consistency: "strong",
      replica: "replica-3",
    });
    expect(warm.status, JSON.stringify(warm.body)).toBe(200);
    await quiet(c);
    // Reset while the master (replica-1) sleeps: it hears nothing from it afterwards.
    await crashReplica(c, "replica-2");
    const results: number[] = [];
    for (let i = 0; i < 3; i++) {
      const read = await query(c, "SELECT count(*) AS n FROM t", {
        consistency: "strong",
        replica: "replica-2",
      });
      results.push(read.status);
      await sleep(200);
    }
    expect(results, "pinned strong reads on replica-2").toEqual([200, 200, 200]);
  });
});

describe("lease on demand refusals (regression)", () => {
  it("refuses a replica in another term and one removed", async () => {
    const c = await cluster("att19-lease-ref", false);
    const wrongTerm = (await nodeStub(env, c, "node-0").leaseOnDemand({
      cluster: c,
      replicaId: "replica-2",
      term: 7,
    })) as LeaseGrant;
    expect(wrongTerm.leaseUntil).toBe(0);
    expect(wrongTerm.refused).toMatch(/term/);
    const removed = await call("DELETE", `/admin/clusters/${c}/replicas/replica-4`);
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    const gone = (await nodeStub(env, c, "node-0").leaseOnDemand({
      cluster: c,
      replicaId: "replica-4",
      term: 1,
    })) as LeaseGrant;
    expect(gone.leaseUntil).toBe(0);
    expect(gone.refused).toBeDefined();
  });
});
