/**
 * Attack: `m:master_id` (durable-objects/replica/role.ts) and the lease
 * request's directory fallback (replica/lease-ask.ts) after promotions of
 * the replica itself, in a cluster after a DELETE (first term 2): a replica
 * that was master and stepped down, and the old first master node-0 (which,
 * never a replica before, starts with masterId defaulting to itself), each
 * reset while the cluster sleeps, must serve a pinned strong read through a
 * lease on demand and see the last write.
 */
import { describe, expect, it } from "vitest";
import { call, exec, freshCluster, patchTunables, query, status, untilAsleep } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function quiet(c: string) {
  await untilAsleep(c);
  await sleep(700);
}

async function promote(c: string, replica: string) {
  let last = await call("POST", `/admin/clusters/${c}/promote`, { body: { replica } });
  for (let i = 0; i < 20 && last.status === 503; i++) {
    await sleep(200);
    last = await call("POST", `/admin/clusters/${c}/promote`, { body: { replica } });
  }
  expect(last.status, JSON.stringify(last.body)).toBe(200);
}

async function eventually(c: string, sql: string) {
  let last = await exec(c, [{ sql }]);
  for (let i = 0; i < 30 && last.status !== 200; i++) {
    await sleep(200);
    last = await exec(c, [{ sql }]);
  }
  expect(last.status, JSON.stringify(last.body)).toBe(200);
}

describe("a replica that was master, reset while the cluster sleeps", () => {
  it("asks the right master for its lease and sees the last write", async () => {
    const c = freshCluster("att19b-mid");
    await eventually(c, "CREATE TABLE old (v)");
    expect((await call("DELETE", `/admin/clusters/${c}?confirm=${c}`)).status).toBe(200);
    await eventually(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
    const tuned = await patchTunables(c, {
      idle_after_ms: 300,
      heartbeat_ms: 50,
      debug_fault_injection: true,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    await promote(c, "replica-1");
    await eventually(c, "INSERT INTO t (v) VALUES ('a')");
    await promote(c, "replica-2");
    await eventually(c, "INSERT INTO t (v) VALUES ('b')");
    expect((await status(c)).body.master as unknown as { term: number }).toMatchObject({
      term: 4,
    });
    await quiet(c);
    for (const id of ["replica-1", "node-0"]) {
      const crashed = await call("POST", `/admin/clusters/${c}/replicas/${id}/crash`, {
        body: {},
      });
      expect(crashed.status, JSON.stringify(crashed.body)).toBe(202);
    }
    await sleep(150);
    for (const id of ["replica-1", "node-0"]) {
      const read = await query(c, "SELECT count(*) AS n FROM t", {
        consistency: "strong",
        replica: id,
      });
      expect(read.status, `${id}: ${JSON.stringify(read.body)}`).toBe(200);
      expect(read.body.servedBy).toBe(id);
      expect(read.body.rows[0]?.n).toBe(2);
    }
    // A write after, then a pinned read on each: linearizable.
    await eventually(c, "INSERT INTO t (v) VALUES ('c')");
    for (const id of ["replica-1", "node-0", "replica-3"]) {
      const read = await query(c, "SELECT count(*) AS n FROM t", {
        consistency: "strong",
        replica: id,
      });
      expect(read.status, `${id}: ${JSON.stringify(read.body)}`).toBe(200);
      expect(read.body.rows[0]?.n).toBe(3);
    }
  });
});
