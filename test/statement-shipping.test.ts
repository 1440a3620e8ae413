/**
 * Large deterministic writes ship as their statement, checked by the effects
 * digest like every entry; anything a replica might compute differently ships
 * as rows, however large.
 */
import { describe, expect, it } from "vitest";
import { exec, freshCluster, patchTunables, status } from "./helpers";
import { sameEverywhere } from "./node-images";

async function logBytes(c: string): Promise<number> {
  return ((await status(c)).body.master as unknown as { logBytes: number }).logBytes;
}

async function databaseBytes(c: string): Promise<number> {
  return ((await status(c)).body.master as unknown as { databaseBytes: number }).databaseBytes;
}

async function bigTable(prefix: string): Promise<string> {
  const c = freshCluster(prefix);
  const setup = await exec(c, [
    { sql: "CREATE TABLE big (id INTEGER PRIMARY KEY, v INTEGER, w)" },
    {
      sql: "INSERT INTO big (v) WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s LIMIT 3000) SELECT x FROM s",
    },
  ]);
  expect(setup.status, JSON.stringify(setup.body)).toBe(200);
  return c;
}

describe("statement shipping for large deterministic writes, 4 replicas", () => {
  it("ships a 3,000-row UPDATE as its statement, and every replica computes the same rows", async () => {
    const c = await bigTable("ship-stmt");
    const before = await logBytes(c);
    const res = await exec(c, [{ sql: "UPDATE big SET v = v * 2 + 1, w = printf('%05d', v)" }]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await logBytes(c)).toBeLessThan(before + 1000);
    const rows = await sameEverywhere(c, "SELECT id, v, w FROM big ORDER BY id");
    expect(rows[2]).toEqual([3, 7, "00003"]);
  });

  it("ships a large write that calls random() as its rows", async () => {
    const c = await bigTable("ship-rows");
    const before = await logBytes(c);
    const fileBefore = await databaseBytes(c);
    const res = await exec(c, [{ sql: "UPDATE big SET w = random()" }]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await logBytes(c)).toBeGreaterThan(before + 3000 * 10);
    // Status reports the master's SQLite file, which holds the log it just grew.
    expect(await databaseBytes(c)).toBeGreaterThan(fileBefore + 3000 * 10);
    await sameEverywhere(c, "SELECT id, w FROM big ORDER BY id");
  });

  it("ships every write as rows with replicate_statement_min_rows 0", async () => {
    const c = await bigTable("ship-never");
    expect((await patchTunables(c, { replicate_statement_min_rows: 0 })).status).toBe(200);
    const before = await logBytes(c);
    expect((await exec(c, [{ sql: "UPDATE big SET v = v + 1" }])).status).toBe(200);
    expect(await logBytes(c)).toBeGreaterThan(before + 3000 * 10);
    await sameEverywhere(c, "SELECT id, v FROM big ORDER BY id");
  });
});
