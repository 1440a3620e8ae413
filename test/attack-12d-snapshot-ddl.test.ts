/**
 * Found with a replica rebuilt from a snapshot, then a foreign key added by
 * ALTER TABLE. The master's schema cache (sqlite/schema.ts) was not
 * invalidated when SnapshotSource created or dropped
 * its `_repl_snap_<n>` shadow tables (master/snapshot-source.ts take / abandon,
 * raw CREATE/DROP TABLE). runDdl (sqlite/write.ts) diffs `before` (the cache)
 * against `after` (reloaded), so a shadow made or dropped behind the cache's
 * back looked like the user's statement touched an internal object.
 *
 * Promise attacked: a valid schema change is committed, not refused, whatever
 * snapshot (replica rebuild, export) runs or ran; the first attempt must not
 * answer RESERVED_NAME "_repl_snap_0".
 */
import { describe, expect, it } from "vitest";
import { exportResponse, shadowTables } from "./backup-helpers";
import { exec, freshCluster, waitUntil } from "./helpers";

async function setup(prefix: string): Promise<string> {
  const c = freshCluster(prefix);
  const made = await exec(c, [
    { sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" },
    { sql: "INSERT INTO t (v) VALUES ('a'), ('b')" },
  ]);
  expect(made.status).toBe(200);
  return c;
}

describe("attack 12d: DDL while / after the master holds snapshot shadows", () => {
  it("ALTER TABLE while an export holds the snapshot is committed", async () => {
    const c = await setup("a12d-snapddl-live");
    const response = await exportResponse(c);
    const reader = response.body?.getReader();
    await reader?.read();
    expect(await shadowTables(c)).toBeGreaterThan(0);
    const res = await exec(c, [{ sql: "ALTER TABLE t ADD COLUMN w TEXT" }]);
    await reader?.cancel();
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });

  it("CREATE TABLE after an export's shadows were dropped is committed", async () => {
    const c = await setup("a12d-snapddl-after");
    const response = await exportResponse(c);
    const reader = response.body?.getReader();
    await reader?.read();
    // A write while the shadows exist (it reads the schema: the cache may load them).
    expect((await exec(c, [{ sql: "CREATE TABLE during (x)" }])).status).toBeGreaterThan(0);
    expect((await exec(c, [{ sql: "UPDATE t SET v = 'c' WHERE id = 1" }])).status).toBe(200);
    for (;;) {
      const { done } = (await reader?.read()) ?? { done: true };
      if (done) break;
    }
    await waitUntil("the shadows are dropped", async () => (await shadowTables(c)) === 0);
    const res = await exec(c, [{ sql: "CREATE TABLE u (id INTEGER PRIMARY KEY)" }]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });
});
