/**
 * Promise attacked: an import's first-batch result "is kept however old it
 * gets, so an import may take longer than the retention" (docs/operations.md),
 * and an import survives a promotion mid-import (its batches' results are on
 * whichever node is master).
 *
 * What breaks: a replica keeps results only inside its log records and indexes
 * them at truncation or promotion (log-results.ts indexLogResults), skipping
 * every record older than idempotency_retention_ms — an import's first batch
 * too, which has no age entry and must never expire. An import running longer
 * than the retention, promoted over once its first batch is past the
 * retention, gets 404 NOT_FOUND ("first batch is not on the cluster") at its
 * next batch on the new master, and stops half loaded.
 */
import { describe, expect, it } from "vitest";
import { importDump, rows } from "./backup-helpers";
import { call, freshCluster, patchTunables, status, waitUntil } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rowsDump(n: number): string {
  let d = "PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\nCREATE TABLE a (x);\n";
  for (let i = 0; i < n; i++) d += `INSERT INTO a VALUES(${i});\n`;
  return `${d}COMMIT;\n`;
}

describe("attack 12e: an import's first batch after a promotion past the retention", () => {
  it("an import longer than the retention survives a promotion mid-import", async () => {
    const c = freshCluster("a12e-imp-first");
    await waitUntil("the master to start", async () => (await status(c)).status === 200);
    const tuned = await patchTunables(c, {
      rep_timeout_ms: 1000,
      commit_timeout_ms: 1000,
      idempotency_retention_ms: 1000,
      debug_fault_injection: true,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    // Each commit waits ~300 ms for replica-1's ack: the import takes several seconds.
    const slow = await call("POST", `/admin/clusters/${c}/replicas/replica-1/delay`, {
      body: { ms: 300 },
    });
    expect(slow.status, JSON.stringify(slow.body)).toBeLessThan(300);
    const running = importDump(c, rowsDump(60_000), { "idempotency-key": "imp-long" });
    // The first batch is committed and past the retention; the import goes on.
    await sleep(2500);
    const promoted = await call("POST", `/admin/clusters/${c}/promote`, {
      body: { replica: "replica-2" },
    });
    const res = await running;
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
    expect(res.status, JSON.stringify(res.body).slice(0, 600)).toBe(200);
    expect(await rows(c, "SELECT count(*) FROM a")).toEqual([[60_000]]);
  }, 90_000);
});
