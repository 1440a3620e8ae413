/**
 * Attack: `startedWith` on import batches after the first
 * (workers/backup/import-run.ts; durable-objects/master/writes.ts importBatch
 * refuses a batch whose first batch's saved result is not on the cluster).
 *
 * 1. A multi-batch import resumed (same Idempotency-Key) after a handover: the
 *    first batch's result must be on the new master (results ride in records).
 * 2. A multi-batch import whose every batch goes in parts (log_record_max_bytes):
 *    the first batch has no result under its own key, only under `key.N`.
 * 3. An import that simply runs longer than idempotency_retention_ms (the
 *    tunable's minimum is 1 s): the master prunes the first batch's result while
 *    the import runs, and its next batch is refused 404 "deleted and created
 *    anew", leaving a half-loaded cluster that a new import (first batch:
 *    cluster must be empty) cannot load either.
 */
import { describe, expect, it } from "vitest";
import { importDump, rows } from "./backup-helpers";
import { call, exec, freshCluster, patchTunables, status, waitUntil } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rowsDump(n: number, value: (i: number) => string): string {
  let d = "PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\nCREATE TABLE a (x);\n";
  for (let i = 0; i < n; i++) d += `INSERT INTO a VALUES(${value(i)});\n`;
  return `${d}COMMIT;\n`;
}

async function started(prefix: string) {
  const c = freshCluster(prefix);
  await waitUntil("the master to start", async () => (await status(c)).status === 200);
  return c;
}

describe("import batches carrying startedWith", () => {
  it("a multi-batch import resumed after a handover is answered from its results", async () => {
    const c = await started("att19b-imp-ho");
    const dump = rowsDump(12_000, (i) => String(i));
    const first = await importDump(c, dump, { "idempotency-key": "imp-1" });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.batches as number).toBeGreaterThanOrEqual(3);
    await waitUntil("every replica to ack", async () => {
      const s = await status(c);
      return s.body.replicas.every((r) => r.ackedLsn === s.body.master.lsn);
    });
    const promoted = await call("POST", `/admin/clusters/${c}/promote`, {
      body: { replica: "replica-2" },
    });
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
    const again = await importDump(c, dump, { "idempotency-key": "imp-1" });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(await rows(c, "SELECT count(*) FROM a")).toEqual([[12_000]]);
  });

  it("a multi-batch import whose batches all go in parts", async () => {
    const c = await started("att19b-imp-parts");
    const tuned = await patchTunables(c, { log_record_max_bytes: 65_536 });
    expect(tuned.status).toBe(200);
    const dump = rowsDump(11_000, (i) => `'${"v".repeat(24)}${i}'`);
    const res = await importDump(c, dump, { "idempotency-key": "imp-2" });
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
    expect(await rows(c, "SELECT count(*) FROM a")).toEqual([[11_000]]);
    const again = await importDump(c, dump, { "idempotency-key": "imp-2" });
    expect(again.status, JSON.stringify(again.body).slice(0, 500)).toBe(200);
    expect(await rows(c, "SELECT count(*) FROM a")).toEqual([[11_000]]);
  });

  it("an import that runs longer than idempotency_retention_ms still loads", async () => {
    const c = await started("att19b-imp-long");
    const tuned = await patchTunables(c, {
      rep_timeout_ms: 1000,
      commit_timeout_ms: 1000,
      idempotency_retention_ms: 1000,
      debug_fault_injection: true,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    // Each commit waits ~300 ms for replica-1's ack (full sync): 9 batches take ~3 s.
    const slow = await call("POST", `/admin/clusters/${c}/replicas/replica-1/delay`, {
      body: { ms: 300 },
    });
    expect(slow.status, JSON.stringify(slow.body)).toBeLessThan(300);
    const dump = rowsDump(42_000, (i) => String(i));
    const t0 = Date.now();
    const res = await importDump(c, dump);
    const took = Date.now() - t0;
    expect(
      { status: res.status, body: JSON.stringify(res.body).slice(0, 300) },
      `took ${took} ms: ${JSON.stringify(res.body).slice(0, 400)}`,
    ).toEqual({ status: 200, body: expect.any(String) });
    expect(await rows(c, "SELECT count(*) FROM a")).toEqual([[42_000]]);
    void exec;
    void sleep;
  });
});
