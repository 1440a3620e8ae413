/**
 * The majority rules durable_lsns brings (core/quorum.ts), through the front
 * door: nothing a strong read returns is missing from a majority, and a master
 * that cannot hear from a majority answers no strong read itself and grants
 * no lease, so a master a majority may have left for a newer term stops
 * serving at once.
 */
import { describe, expect, it } from "vitest";
import { call, exec, freshCluster, patchTunables, query, status, waitUntil } from "./helpers";

const REPLICAS = ["replica-1", "replica-2", "replica-3", "replica-4"];

async function setup(prefix: string, tunables: Record<string, unknown> = {}) {
  const c = freshCluster(prefix);
  expect((await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status).toBe(
    200,
  );
  const tuned = await patchTunables(c, { debug_fault_injection: true, ...tunables });
  expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
  return c;
}

const fault = (c: string, id: string, route: string) =>
  call("POST", `/admin/clusters/${c}/replicas/${id}/${route}`);

describe("majorities with durable_lsns (on by default), 4 replicas", () => {
  it("a write on fewer than a majority is NOT_DURABLE, and no strong read returns it", async () => {
    const c = await setup("majority-read", { rep_timeout_ms: 300, commit_timeout_ms: 2000 });
    expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('before')" }])).status).toBe(200);
    // Three of five nodes stopped: the master and one replica are two, not a majority.
    for (const id of ["replica-2", "replica-3", "replica-4"]) {
      expect((await fault(c, id, "stop")).status).toBe(200);
    }
    const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('w')" }], "w-not-durable");
    expect(w.status, JSON.stringify(w.body)).toBe(503);
    expect((w.body.error as { code: string }).code).toBe("NOT_DURABLE");
    for (const replica of ["master", "replica-1", undefined]) {
      const read = await query(c, "SELECT v FROM t ORDER BY id", {
        ...(replica === undefined ? {} : { replica }),
      });
      if (read.status === 200) {
        expect(
          read.body.rows.map((r) => r.v),
          `served by ${read.body.servedBy}`,
        ).toEqual(["before"]);
      } else {
        expect(read.status, JSON.stringify(read.body)).toBe(503);
      }
    }
    // Once a majority has it again, the retry is acknowledged and reads return it.
    for (const id of ["replica-2", "replica-3"])
      expect((await fault(c, id, "start")).status).toBe(200);
    await waitUntil("the retry is acknowledged", async () => {
      return (
        (await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('w')" }], "w-not-durable")).status === 200
      );
    });
    const after = await query(c, "SELECT v FROM t ORDER BY id", { replica: "master" });
    expect(after.status).toBe(200);
    expect(after.body.rows.map((r) => r.v)).toEqual(["before", "w"]);
  });

  it("a master cut off from a majority answers no strong read and grants no lease", async () => {
    const c = await setup("majority-cut", { heartbeat_ms: 50 });
    expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('x')" }])).status).toBe(200);
    const warm = await query(c, "SELECT v FROM t", { replica: "master" });
    expect(warm.status).toBe(200);
    for (const id of ["replica-2", "replica-3", "replica-4"]) {
      expect((await fault(c, id, "disconnect")).status).toBe(200);
    }
    // Within a lease period (500 ms) the contact it had runs out.
    await new Promise((r) => setTimeout(r, 700));
    const read = await query(c, "SELECT v FROM t", { replica: "master" });
    expect(read.status, JSON.stringify(read.body)).toBe(503);
    expect(JSON.stringify(read.body)).toMatch(/majority/);
    // replica-1 still hears from the master, but is granted no lease: it redirects strong reads.
    await waitUntil("replica-1's lease is over", async () => {
      const s = (await status(c)).body.replicas as unknown as { id: string; leaseUntil: number }[];
      return (s.find((r) => r.id === "replica-1")?.leaseUntil ?? 0) < Date.now();
    });
    const onReplica = await query(c, "SELECT v FROM t", { replica: "replica-1" });
    expect(onReplica.status, JSON.stringify(onReplica.body)).toBe(503);
    // Reconnected, it serves again.
    for (const id of ["replica-2", "replica-3", "replica-4"]) {
      expect((await fault(c, id, "connect")).status).toBe(200);
    }
    await waitUntil("the master serves strong reads again", async () => {
      return (await query(c, "SELECT v FROM t", { replica: "master" })).status === 200;
    });
  });

  it("with durable_lsns off, the same master keeps serving (the rule is durable_lsns')", async () => {
    const c = await setup("majority-off", { durable_lsns: false });
    for (const id of REPLICAS.slice(1)) expect((await fault(c, id, "disconnect")).status).toBe(200);
    await new Promise((r) => setTimeout(r, 700));
    const read = await query(c, "SELECT count(*) AS n FROM t", { replica: "master" });
    expect(read.status, JSON.stringify(read.body)).toBe(200);
  });
});
