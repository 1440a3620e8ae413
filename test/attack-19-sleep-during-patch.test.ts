/**
 * Attack: the master falls asleep in the middle of a tunables change.
 *
 * PATCH …/tunables touches the master once, at its start; the change then
 * awaits (leaving sync_mode full waits out every lease granted, up to
 * coherency_lease_ms; publishing to the directory). The heartbeat job keeps
 * running meanwhile and judges idleness with the tunables still in force, so
 * with idle_after_ms shorter than that wait the master sleeps mid-change.
 * Then the new tunables apply to a sleeping master that never looks again:
 * here master_failover_ms comes on, and the master sleeps with it on.
 *
 * Promise 2: a cluster with master_failover_ms on never sleeps.
 *
 * Also held (regression): the same change made to a master that is already
 * asleep wakes it, and it stays awake.
 */
import { describe, expect, it } from "vitest";
import { exec, freshCluster, idleOf, patchTunables, untilAsleep } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function cluster(prefix: string) {
  const c = freshCluster(prefix);
  expect((await exec(c, [{ sql: "CREATE TABLE t (a)" }])).status).toBe(200);
  const tuned = await patchTunables(c, {
    idle_after_ms: 100,
    heartbeat_ms: 20,
    coherency_lease_ms: 1_500,
  });
  expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
  expect((await exec(c, [{ sql: "INSERT INTO t VALUES (1)" }])).status).toBe(200);
  return c;
}

describe("master_failover_ms turned on", () => {
  it("keeps the master awake even when the change itself took longer than idle_after_ms", async () => {
    const c = await cluster("att19-patch-mid");
    // A heartbeat has just granted 1.5 s leases: leaving full waits them out.
    await sleep(50);
    const patched = await patchTunables(c, { sync_mode: "quorum", master_failover_ms: 3_000 });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    await sleep(500);
    const idle = await idleOf(c);
    expect(idle.asleep, JSON.stringify(idle)).toBe(false);
    expect(idle.awakeBecause).toMatch(/master_failover_ms/);
  });

  it("wakes a sleeping master, which then stays awake (regression)", async () => {
    const c = await cluster("att19-patch-asleep");
    await untilAsleep(c, 10_000);
    const patched = await patchTunables(c, { master_failover_ms: 3_000 });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    await sleep(600);
    const idle = await idleOf(c);
    expect(idle.asleep, JSON.stringify(idle)).toBe(false);
    expect(idle.awakeBecause).toMatch(/master_failover_ms/);
  });
});
