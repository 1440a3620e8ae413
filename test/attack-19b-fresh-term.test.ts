/**
 * Attack: a name's next cluster after a DELETE starts in a term above 1
 * (firstRecord(term + 1), durable-objects/directory.ts forget; node-host.ts
 * stillMaster adopts it). Does anything assume term 1 for a new cluster:
 * replica term checks, the PROMOTE record, the lease horizon, handover,
 * promotion without the master, membership, verify, export/import, the
 * change stream?
 *
 * Promise: the next use after DELETE is a new, empty, working cluster.
 */
import { describe, expect, it } from "vitest";
import { exportDump, importDump } from "./backup-helpers";
import { page } from "./change-helpers";
import { deleteByName } from "./delete-helpers";
import {
  addReplicaRetrying,
  call,
  exec,
  freshCluster,
  query,
  status,
  verify,
  waitUntil,
} from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const termOf = async (c: string) =>
  ((await status(c)).body.master as unknown as { term: number; id: string }).term;

async function eventually(c: string, sql: string) {
  let last = await exec(c, [{ sql }]);
  for (let i = 0; i < 30 && last.status !== 200; i++) {
    await sleep(200);
    last = await exec(c, [{ sql }]);
  }
  expect(last.status, `${sql}: ${JSON.stringify(last.body)}`).toBe(200);
  return last;
}

async function promote(c: string, body: Record<string, unknown>) {
  let last = await call("POST", `/admin/clusters/${c}/promote`, { body });
  for (let i = 0; i < 20 && last.status === 503; i++) {
    await sleep(200);
    last = await call("POST", `/admin/clusters/${c}/promote`, { body });
  }
  expect(last.status, JSON.stringify(last.body)).toBe(200);
  return last.body as { master: string; term: number };
}

async function allAcked(c: string) {
  await waitUntil("every replica to ack", async () => {
    const s = await status(c);
    return s.body.replicas.every((r) => r.state === "coherent" && r.ackedLsn === s.body.master.lsn);
  });
}

/** A cluster deleted in term 3 (two handovers), the name used again. */
async function reborn(prefix: string) {
  const c = freshCluster(prefix);
  await eventually(c, "CREATE TABLE old (v)");
  await allAcked(c);
  await promote(c, { replica: "replica-1" });
  await eventually(c, "INSERT INTO old VALUES (1)");
  await allAcked(c);
  await promote(c, { replica: "replica-2" });
  await eventually(c, "INSERT INTO old VALUES (2)");
  expect(await termOf(c)).toBe(3);
  const deleted = await deleteByName(c);
  expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
  await eventually(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
  expect(await termOf(c)).toBe(4);
  return c;
}

describe("a new cluster whose first term is 4", () => {
  it("writes, strong reads on replicas, handover, forced promotion, membership, verify", async () => {
    const c = await reborn("att19b-fresh");
    await eventually(c, "INSERT INTO t (v) VALUES ('a')");
    await allAcked(c);
    for (const r of ["replica-1", "replica-2", "replica-3"]) {
      const read = await query(c, "SELECT count(*) AS n FROM t", {
        consistency: "strong",
        replica: r,
      });
      expect(read.status, `${r}: ${JSON.stringify(read.body)}`).toBe(200);
      expect(read.body.rows[0]?.n).toBe(1);
    }
    const ho = await promote(c, { replica: "replica-1" });
    expect(ho).toEqual({ master: "replica-1", term: 5 });
    await eventually(c, "INSERT INTO t (v) VALUES ('b')");
    await allAcked(c);
    const forced = await promote(c, { force: true });
    expect(forced.term).toBe(6);
    await eventually(c, "INSERT INTO t (v) VALUES ('c')");
    const added = await addReplicaRetrying(c);
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    await allAcked(c);
    const removed = await call("DELETE", `/admin/clusters/${c}/replicas/replica-3`);
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    await eventually(c, "INSERT INTO t (v) VALUES ('d')");
    await allAcked(c);
    const v = await verify(c);
    expect(v.status, JSON.stringify(v.body)).toBe(200);
    expect(v.body.agree, JSON.stringify(v.body)).toBe(true);
    const read = await query(c, "SELECT group_concat(v) AS vs FROM t", { consistency: "strong" });
    expect(read.body.rows[0]?.vs).toBe("a,b,c,d");
    const old = await query(c, "SELECT count(*) AS n FROM sqlite_master WHERE name = 'old'", {
      consistency: "strong",
    });
    expect(old.body.rows[0]?.n).toBe(0);
  });

  it("the change stream starts at the new cluster's first LSN; export and import work", async () => {
    const c = await reborn("att19b-freshx");
    await eventually(c, "INSERT INTO t (v) VALUES ('x')");
    await allAcked(c);
    const changes = await page(c, "since=0");
    expect(changes.status, JSON.stringify(changes.body)).toBe(200);
    const lsns = changes.body.events.map((e) => e.lsn);
    expect(lsns[0]).toBe(1);
    expect(changes.body.events.every((e) => e.term === 4)).toBe(true);
    const dump = await exportDump(c);
    expect(dump.status).toBe(200);
    // Import into another reborn cluster (term 4 too), after wiping it again.
    const d = freshCluster("att19b-freshi");
    await eventually(d, "CREATE TABLE z (v)");
    await promote(d, { replica: "replica-2" });
    expect((await deleteByName(d)).status).toBe(200);
    let res = await importDump(d, dump.text, { "idempotency-key": "k1" });
    for (let i = 0; i < 20 && res.status === 503; i++) {
      await sleep(200);
      res = await importDump(d, dump.text, { "idempotency-key": "k1" });
    }
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const read = await query(d, "SELECT v FROM t", { consistency: "strong" });
    expect(read.body.rows).toEqual([{ v: "x" }]);
    // Resumed with the same key: answered from saved results, nothing twice.
    const again = await importDump(d, dump.text, { "idempotency-key": "k1" });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(await termOf(d)).toBe(3);
  });
});
