import { describe, expect, it } from "vitest";
import { call, exec, freshCluster, patchTunables, query, status } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("strong reads on a replica marked incoherent while it holds a lease, 4 replicas", () => {
  it("a commit made after the mark is not acknowledged while that replica may still serve a strong read without it", async () => {
    const c = freshCluster("lease");
    const ddl = await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }]);
    expect(ddl.status).toBe(200);
    const leaseMs = 1500;
    const tuned = await patchTunables(c, {
      rep_timeout_ms: 50,
      coherency_lease_ms: leaseMs,
      heartbeat_ms: 100,
      slow_replica_factor: 0,
      debug_fault_injection: true,
    });
    expect(tuned.status).toBe(200);
    // A heartbeat grants replica-1 a lease; then its link is cut (it stays up, lease in hand).
    await sleep(300);
    const cut = await call("POST", `/admin/clusters/${c}/replicas/replica-1/disconnect`);
    expect(cut.status).toBe(200);
    const cutAt = Date.now();
    // The first commit misses replica-1 at its 50 ms deadline and marks it incoherent.
    const first = exec(c, [{ sql: "INSERT INTO t (v) VALUES ('first')" }]);
    await sleep(150);
    const s = await status(c);
    expect(s.body.replicas.find((r) => r.id === "replica-1")?.state).toBe("incoherent");
    // A commit made now must still wait for replica-1's lease to run out ...
    const second = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('second')" }]);
    expect(second.status).toBe(200);
    expect(Date.now() - cutAt).toBeGreaterThanOrEqual(leaseMs - 400);
    // ... so a strong read replica-1 serves after the ack cannot miss it: it redirects.
    const read = await query(c, "SELECT v FROM t ORDER BY id", { replica: "replica-1" });
    expect(read.status, JSON.stringify(read.body)).toBe(503);
    expect((await first).status).toBe(200);
    // The master, and any replica with a lease, has both.
    const strong = await query(c, "SELECT v FROM t ORDER BY id");
    expect(strong.body.rows).toEqual([{ v: "first" }, { v: "second" }]);
  });
});
