/**
 * Review finding (fixed by log matching, replica/apply-batch.ts): a lost master
 * with an unacknowledged tail comes back two terms later. Before the fix it was
 * not rebuilt.
 *
 * judgeTerm compares the replica's applied LSN with the first LSN of the term
 * of the message it receives only. node-0 left term 1 with a tail (z1, z2:
 * answered NOT_DURABLE, on node-0 alone). Term 2 began at the LSN right after
 * the last acknowledged write, but node-0 comes back in term 3, which began
 * later than node-0's tail ends: the check passes, node-0 adopts term 3 and
 * the master resends from node-0's LSN, on top of z1 and z2. node-0 keeps two
 * writes that were refused and never gets the term-2 records at those LSNs.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { nodeStub } from "../durable-objects/node-rpc";
import { call, exec, freshCluster, query, status, verify, waitUntil } from "./helpers";

const REPLICAS = ["replica-1", "replica-2", "replica-3", "replica-4"];

describe("review finding (fixed): a tail from term 1 meets term 3", () => {
  it("is found by log matching and rebuilt, and verify agrees", async () => {
    const c = freshCluster("zz-r2-tail");
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE)" }])).status,
    ).toBe(200);
    const tuned = await call("PATCH", `/admin/clusters/${c}/tunables`, {
      body: { debug_fault_injection: true, rep_timeout_ms: 300, commit_timeout_ms: 1500 },
    });
    expect(tuned.status).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('a')" }], "a")).status).toBe(200);
    for (const id of REPLICAS) {
      expect((await call("POST", `/admin/clusters/${c}/replicas/${id}/stop`)).status).toBe(200);
    }
    for (const k of ["z1", "z2"]) {
      const r = await exec(c, [{ sql: "INSERT INTO t (k) VALUES (?)", params: [k] }], k);
      console.log(k, r.status, JSON.stringify(r.body));
      expect(r.status).toBe(503);
    }
    expect((await call("POST", `/admin/clusters/${c}/master/lose`)).status).toBe(202);
    for (const id of REPLICAS) await nodeStub(env, c, id).setStopped(false);

    const p2 = await call<{ master: string; term: number }>(
      "POST",
      `/admin/clusters/${c}/promote`,
      { body: {} },
    );
    console.log("promote 2:", p2.status, JSON.stringify(p2.body));
    expect(p2.status).toBe(200);
    // Right after the promotion commits wait out the inherited lease horizon: retry with the key.
    for (const k of ["b1", "b2", "b3", "b4"]) {
      await waitUntil(`write ${k}`, async () => {
        const r = await exec(c, [{ sql: "INSERT INTO t (k) VALUES (?)", params: [k] }], k);
        return r.status === 200;
      });
    }
    // A handover (the master of term 2 answers) to term 3.
    let p3: { status: number; body: { master: string; term: number } } = {
      status: 0,
      body: { master: "", term: 0 },
    };
    await waitUntil("handover to term 3", async () => {
      p3 = await call<{ master: string; term: number }>("POST", `/admin/clusters/${c}/promote`, {
        body: {},
      });
      return p3.status === 200;
    });
    console.log("promote 3:", p3.status, JSON.stringify(p3.body));
    expect(p3.body.term).toBe(3);
    await waitUntil("write c1", async () => {
      const r = await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('c1')" }], "c1");
      return r.status === 200;
    });

    const restored = await call("POST", `/admin/clusters/${c}/members/node-0/restore`);
    expect(restored.status).toBe(200);
    await waitUntil(
      "node-0 coherent at the master's LSN",
      async () => {
        const s = (await status(c)).body as unknown as {
          master: { lsn: number };
          replicas: { id: string; state: string; ackedLsn: number }[];
        };
        const n0 = s.replicas.find((r) => r.id === "node-0");
        return n0?.state === "coherent" && n0.ackedLsn === s.master.lsn;
      },
      20_000,
    );
    const s = await status(c);
    console.log(
      "status:",
      JSON.stringify((s.body as unknown as { master: unknown }).master),
      JSON.stringify(s.body.replicas),
    );
    const any = await query(c, "SELECT k FROM t ORDER BY k", {
      replica: "node-0",
      consistency: "any",
    });
    console.log("node-0 (any):", any.status, JSON.stringify(any.body));
    const strong = await query(c, "SELECT k FROM t ORDER BY k", { replica: "node-0" });
    console.log("node-0 (strong):", strong.status, JSON.stringify(strong.body));
    const master = await query(c, "SELECT k FROM t ORDER BY k", { replica: "master" });
    console.log("master (strong):", master.status, JSON.stringify(master.body));
    const v = await verify(c);
    console.log("verify:", JSON.stringify(v.body.mismatches), v.body.agree);
    expect(any.body.rows.map((r) => r.k)).toEqual(["a", "b1", "b2", "b3", "b4", "c1"]);
    expect(v.body.agree).toBe(true);
  }, 90_000);
});
