/**
 * Attacks on DELETE /admin/clusters/{cluster} that held; kept as regression
 * tests.
 *
 * - Two DELETEs at once: both answer, nothing is left, the name works after.
 * - DELETE of a sleeping cluster, and of one with master_failover_ms on (its
 *   replicas' watchdogs hold alarms): every member empty, no alarm left.
 * - A write while a deletion of a node-0-mastered cluster is half done (the
 *   master emptied, a replica not yet): it fails, and the name's next use is
 *   a new cluster (its term after the deleted one's).
 * - Confirm variants: repeated query parameter, wrong case, the name with a
 *   suffix: 400 and nothing changes.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { nodeObjectName } from "../durable-objects/node-rpc";
import { deleteCluster } from "../workers/cluster-delete";
import { deleteByName, envHolding } from "./delete-helpers";
import { call, exec, freshCluster, patchTunables, query, status, waitUntil } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MEMBERS = ["node-0", "replica-1", "replica-2", "replica-3", "replica-4"];

async function leftOf(c: string, member: string) {
  const ns = env.NODE as unknown as DurableObjectNamespace;
  const stub = ns.get(ns.idFromName(nodeObjectName(c, member)));
  return runInDurableObject(stub, async (_, state) => ({
    tables: state.storage.sql
      .exec<{ name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'",
      )
      .toArray()
      .map((r) => r.name),
    // (m:role is written by the constructor that runInDurableObject runs: not a leftover.)
    cluster: state.storage.kv.get<string>("m:cluster") ?? null,
    identity: state.storage.kv.get<string>("m:identity") ?? null,
    alarm: await state.storage.getAlarm(),
  }));
}

async function expectEmpty(c: string) {
  for (const member of MEMBERS) {
    expect(await leftOf(c, member), member).toEqual({
      tables: [],
      cluster: null,
      identity: null,
      alarm: null,
    });
  }
}

async function populated(prefix: string, tunables: Record<string, unknown> = {}) {
  const c = freshCluster(prefix);
  const made = await exec(c, [{ sql: "CREATE TABLE t (a)" }, { sql: "INSERT INTO t VALUES (1)" }]);
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  if (Object.keys(tunables).length > 0) {
    const tuned = await patchTunables(c, tunables);
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
  }
  await waitUntil("every replica to ack", async () => {
    const s = await status(c);
    return s.body.replicas.every((r) => r.ackedLsn === s.body.master.lsn);
  });
  return c;
}

async function freshAgain(c: string) {
  const again = await exec(c, [{ sql: "CREATE TABLE t (a)" }]);
  expect(again.status, JSON.stringify(again.body)).toBe(200);
  const s = await status(c);
  // A new cluster, its term after every term the deleted one used (never reused).
  expect((s.body.master as unknown as { term: number }).term).toBeGreaterThan(1);
  expect(s.body.master.lsn).toBe(1);
}

describe("DELETE, attacks that held", () => {
  it("two DELETEs at once both finish and leave nothing", async () => {
    const c = await populated("att19-deltwo");
    const [a, b] = await Promise.all([deleteByName(c), deleteByName(c)]);
    expect([a.status, b.status], JSON.stringify([a.body, b.body])).toEqual([200, 200]);
    await expectEmpty(c);
    await freshAgain(c);
  });

  it("a sleeping cluster, and one whose replicas hold watchdog alarms, leave no storage or alarm", async () => {
    const asleep = await populated("att19-delsleep", { idle_after_ms: 200, heartbeat_ms: 20 });
    await waitUntil(
      "the master to sleep",
      async () =>
        ((await status(asleep)).body.master as unknown as { idle: { asleep: boolean } }).idle
          .asleep,
    );
    const watched = await populated("att19-delwatch", { master_failover_ms: 2_000 });
    await sleep(300);
    expect((await leftOf(watched, "replica-2")).alarm).not.toBeNull();
    for (const c of [asleep, watched]) {
      const deleted = await deleteByName(c);
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
      await expectEmpty(c);
    }
  });

  it("a write while the deletion is half done fails, and the name starts afresh", async () => {
    const c = await populated("att19-delhalf");
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let reached = () => {};
    const midway = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const deletion = deleteCluster(envHolding(`${c}:replica-4`, "destroy", gate, reached), c);
    await midway;
    await sleep(50);
    const write = await exec(c, [{ sql: "INSERT INTO t VALUES (2)" }]);
    const read = await query(c, "SELECT * FROM t", { consistency: "strong" });
    open();
    await deletion;
    expect(write.status, JSON.stringify(write.body)).toBe(503);
    expect(read.status, JSON.stringify(read.body)).not.toBe(200);
    await expectEmpty(c);
    await freshAgain(c);
  });

  it("refuses confirm variants and changes nothing", async () => {
    const c = await populated("att19-delconf");
    for (const path of [
      `/admin/clusters/${c}?confirm=${c}x`,
      `/admin/clusters/${c}?confirm=${c.toUpperCase()}`,
      `/admin/clusters/${c}?confirm=`,
      `/admin/clusters/${c}?Confirm=${c}`,
      `/admin/clusters/${c}?confirm=x&confirm=${c}`,
    ]) {
      const refused = await call("DELETE", path);
      expect(refused.status, `${path}: ${JSON.stringify(refused.body)}`).toBe(400);
    }
    const read = await query(c, "SELECT count(*) AS n FROM t", { consistency: "strong" });
    expect(read.status).toBe(200);
    expect(read.body.rows[0]?.n).toBe(1);
  });
});
