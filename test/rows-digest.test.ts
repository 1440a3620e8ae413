/**
 * A rows entry carries its effects digest only when its rows touch a table a
 * foreign key joins, the only rows a replica checks by digest. A replica whose
 * schema joins a table by a foreign key the master's does not (its schema is
 * not the master's) must not take the missing digest for agreement: it stops
 * applying and reports diverged.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { nodeObjectName } from "../durable-objects/node-rpc";
import type { SqlNode } from "../durable-objects/sqlite/schema";
import { exec, freshCluster, status, waitUntil } from "./helpers";
import { converged } from "./node-images";

describe("rows entries and their digest", () => {
  it("a replica joining a table by a foreign key the master has not reports diverged on its rows", async () => {
    const c = freshCluster("rows-digest");
    const ddl = await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }]);
    expect(ddl.status, JSON.stringify(ddl.body)).toBe(200);
    await converged(c);
    // Behind the log's back, replica-1 gains a child table of t.
    const stub = env.NODE.get(env.NODE.idFromName(nodeObjectName(c, "replica-1")));
    await runInDurableObject(stub, (instance) => {
      const node = (instance as unknown as { node: SqlNode }).node;
      node.sql.exec("CREATE TABLE stray (p INTEGER REFERENCES t (id) ON DELETE CASCADE)");
      node.schema.invalidate();
    });
    const write = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('a')" }]);
    expect(write.status, JSON.stringify(write.body)).toBe(200);
    await waitUntil("replica-1 reports diverged", async () => {
      const s = await status(c);
      const r1 = s.body.replicas.find((r) => r.id === "replica-1");
      return (
        r1?.incoherentReason === "diverged" ||
        /foreign key joins here/.test((r1 as { lastError?: string } | undefined)?.lastError ?? "")
      );
    });
    // The other replicas, whose schema is the master's, took the rows unchecked and stay coherent.
    const s = await status(c);
    for (const r of s.body.replicas.filter((x) => x.id !== "replica-1")) {
      expect(r.state, r.id).toBe("coherent");
    }
  }, 60_000);
});
