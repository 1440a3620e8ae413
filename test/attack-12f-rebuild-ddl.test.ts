/**
 * Promise attacked: every schema change replicates and rebuilds with exact
 * values; verify never says agree when nodes differ. Here DDL that renames and
 * drops tables joined by foreign keys, with writes in the same requests, runs
 * while a new replica is being built from a multi-chunk snapshot (its rows
 * staged in several messages) and over a slow link with several calls in
 * flight; afterwards every node must hold the master's rows and schema.
 */
import { describe, expect, it } from "vitest";
import { call, exec, freshCluster, patchTunables, status, verify, waitUntil } from "./helpers";
import { NODES } from "./node-images";
import { sameOnEveryNode } from "./review-helpers";

describe("attack 12f: DDL on foreign-key tables while a replica is rebuilt", () => {
  it("held without a rebuild: the same requests are committed", () => run(false), 120_000);
  it(
    "renames and drops during a snapshot stream, then every node agrees",
    () => run(true),
    120_000,
  );
});

async function run(rebuild: boolean): Promise<void> {
  {
    const c = freshCluster("a12f-rebuild-ddl");
    const setup = await exec(c, [
      { sql: "CREATE TABLE p (id INTEGER PRIMARY KEY, big TEXT)" },
      {
        sql: "CREATE TABLE ch (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p(id) ON DELETE CASCADE ON UPDATE CASCADE, v TEXT)",
      },
      { sql: "CREATE TABLE other (id INTEGER PRIMARY KEY, v TEXT)" },
    ]);
    expect(setup.status, JSON.stringify(setup.body)).toBe(200);
    for (let i = 0; i < 6; i++) {
      const r = await exec(c, [
        {
          sql: "INSERT INTO p (big) SELECT printf('%.*c', 20000, 'x') || value FROM (WITH RECURSIVE s(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM s WHERE value < 50) SELECT value FROM s)",
        },
        {
          sql: "INSERT INTO ch (pid, v) SELECT id, 'c' || id FROM p WHERE id > ?",
          params: [i * 50],
        },
      ]);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    const tuned = await patchTunables(c, {
      debug_fault_injection: true,
      debug_link_delay_ms: 300,
      relay_calls_in_flight: 4,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    const before = (await status(c)).body.replicas.map((r) => r.id);
    if (rebuild) {
      const add = await call("POST", `/admin/clusters/${c}/replicas`);
      expect(add.status, JSON.stringify(add.body)).toBe(201);
    }
    const steps: { sql: string; params?: unknown[] }[][] = [
      [
        { sql: "ALTER TABLE p RENAME TO p2" },
        { sql: "UPDATE p2 SET id = id + 1000 WHERE id % 7 = 0" },
        { sql: "INSERT INTO ch (pid, v) VALUES (1, 'late')" },
      ],
      [
        { sql: "DELETE FROM p2 WHERE id % 5 = 0" },
        { sql: "ALTER TABLE ch RENAME COLUMN v TO w" },
        { sql: "INSERT INTO other (v) SELECT w FROM ch WHERE id % 3 = 0" },
      ],
      [
        { sql: "CREATE INDEX chw ON ch(w)" },
        { sql: "UPDATE ch SET w = w || '!' WHERE pid % 2 = 0" },
        { sql: "DROP TABLE ch" },
        { sql: "DELETE FROM p2 WHERE id % 11 = 0" },
      ],
    ];
    for (const [i, step] of steps.entries()) {
      const r = await exec(c, step);
      expect(r.status, `step ${i}: ${JSON.stringify(r.body)}`).toBe(200);
    }
    expect(before.length).toBeGreaterThan(0);
    await patchTunables(c, { debug_link_delay_ms: 0 });
    await waitUntil(
      "every replica coherent",
      async () => (await status(c)).body.replicas.every((r) => r.state === "coherent"),
      60_000,
    );
    const v = await verify(c);
    expect(v.status, JSON.stringify(v.body)).toBe(200);
    expect(v.body.agree, JSON.stringify(v.body)).toBe(true);
    const nodes = rebuild ? [...NODES] : NODES.slice(0, 4);
    await sameOnEveryNode(c, "SELECT id, length(big), substr(big, -3) FROM p2 ORDER BY id", nodes);
    await sameOnEveryNode(c, "SELECT * FROM other ORDER BY id", nodes);
    await sameOnEveryNode(
      c,
      "SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%' ORDER BY name",
      nodes,
    );
  }
}
