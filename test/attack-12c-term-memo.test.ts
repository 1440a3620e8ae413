/**
 * Attack on LogKeeper.termAt's memo: replica-1 applies a record of term 1 the
 * others never get (its memo holds it), is stopped (same role, memo kept),
 * the master is lost and replica-2 promoted writes other records at that LSN
 * under term 2. replica-1 restarted must be found diverged and rebuilt, and
 * every node agree.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { nodeStub } from "../durable-objects/node-rpc";
import { call, exec, freshCluster, query, status, verify, waitUntil } from "./helpers";

describe("attack 12c: term memo after an old master's tail", () => {
  it("a live replica whose newest record is an old master's tail is rebuilt, not kept", async () => {
    const c = freshCluster("a12c-memo");
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE)" }])).status,
    ).toBe(200);
    const tuned = await call("PATCH", `/admin/clusters/${c}/tunables`, {
      body: { debug_fault_injection: true, rep_timeout_ms: 300, commit_timeout_ms: 1500 },
    });
    expect(tuned.status).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('a')" }], "a")).status).toBe(200);
    for (const id of ["replica-2", "replica-3", "replica-4"]) {
      expect((await call("POST", `/admin/clusters/${c}/replicas/${id}/stop`)).status).toBe(200);
    }
    const z = await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('z1')" }], "z1");
    expect(z.status).toBe(503);
    await waitUntil("replica-1 applied z1", async () => {
      const r = await query(c, "SELECT k FROM t ORDER BY k", {
        replica: "replica-1",
        consistency: "any",
      });
      return r.status === 200 && r.body.rows.length === 2;
    });
    expect((await call("POST", `/admin/clusters/${c}/replicas/replica-1/stop`)).status).toBe(200);
    expect((await call("POST", `/admin/clusters/${c}/master/lose`)).status).toBe(202);
    for (const id of ["replica-2", "replica-3", "replica-4"])
      await nodeStub(env, c, id).setStopped(false);
    let p2 = await call<{ master: string; term: number }>("POST", `/admin/clusters/${c}/promote`, {
      body: {},
    });
    console.log("promote:", p2.status, JSON.stringify(p2.body));
    await waitUntil("promotion", async () => {
      if (p2.status === 200) return true;
      p2 = await call("POST", `/admin/clusters/${c}/promote`, { body: {} });
      console.log("promote:", p2.status, JSON.stringify(p2.body));
      return p2.status === 200;
    });
    for (const k of ["b1", "b2"]) {
      await waitUntil(`write ${k}`, async () => {
        const r = await exec(c, [{ sql: "INSERT INTO t (k) VALUES (?)", params: [k] }], k);
        return r.status === 200;
      });
    }
    // The stopped node (still a replica role with its memo) comes back.
    await nodeStub(env, c, "replica-1").setStopped(false);
    await waitUntil(
      "every replica coherent at the master's LSN",
      async () => {
        const s = await status(c);
        return s.body.replicas
          .filter((r) => r.id !== "node-0")
          .every((r) => r.ackedLsn === s.body.master.lsn && r.state === "coherent");
      },
      30_000,
    );
    await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('c1')" }], "c1");
    const s = await status(c);
    console.log(JSON.stringify(s.body.replicas));
    const nodes = ["master", ...s.body.replicas.map((r) => r.id).filter((id) => id !== "node-0")];
    const master = await query(c, "SELECT k FROM t ORDER BY k", {
      consistency: "any",
      replica: "master",
    });
    expect(master.body.rows.map((r) => r.k)).toEqual(["a", "b1", "b2", "c1"]);
    await waitUntil("all at the master's LSN", async () => {
      const t = await status(c);
      return t.body.replicas
        .filter((r) => r.id !== "node-0")
        .every((r) => r.ackedLsn === t.body.master.lsn);
    });
    for (const n of nodes) {
      const r = await query(c, "SELECT k FROM t ORDER BY k", { replica: n, consistency: "any" });
      expect(
        r.body.rows.map((x) => x.k),
        n,
      ).toEqual(["a", "b1", "b2", "c1"]);
    }
    const v = await verify(c);
    console.log("verify:", JSON.stringify(v.body));
    expect(
      v.body.mismatches.filter((m) => !m.includes("node-0")),
      JSON.stringify(v.body),
    ).toEqual([]);
  }, 60_000);
});
