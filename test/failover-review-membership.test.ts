/**
 * Review 2: membership changes take effect at once, with no joint majority.
 *
 * A write acknowledged on a majority of five (node-0, replica-1, replica-2;
 * replica-3 and replica-4 down) stops being on a majority when the operator
 * removes replica-1 and replica-2 one after the other: each removal is
 * published and takes effect immediately, without waiting for the remaining
 * members to hold what was acknowledged (Raft commits each change on the new
 * configuration before the next). Then the master is lost, the two remaining
 * replicas come back, and a promotion without the master finds a majority
 * (2 of 3) that lacks the acknowledged write.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { nodeStub } from "../durable-objects/node-rpc";
import { call, exec, freshCluster, query, status, waitUntil } from "./helpers";

describe("review finding (fixed): removals one after the other", () => {
  it("a removal that would leave an acknowledged write on too few members is refused, and the write survives a promotion without the master", async () => {
    const c = freshCluster("zz-r2-members");
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE)" }])).status,
    ).toBe(200);
    const tuned = await call("PATCH", `/admin/clusters/${c}/tunables`, {
      body: { debug_fault_injection: true, rep_timeout_ms: 300, commit_timeout_ms: 3000 },
    });
    expect(tuned.status).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('a')" }], "a")).status).toBe(200);
    for (const id of ["replica-3", "replica-4"]) {
      expect((await call("POST", `/admin/clusters/${c}/replicas/${id}/stop`)).status).toBe(200);
    }
    // W is on node-0, replica-1, replica-2: three of five, a majority: acknowledged.
    const w = await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('w')" }], "w");
    console.log("W:", w.status, JSON.stringify(w.body));
    expect(w.status).toBe(200);
    await waitUntil("replica-3, replica-4 out of the wait sets", async () => {
      const s = (await status(c)).body as unknown as { replicas: { id: string; state: string }[] };
      return s.replicas.filter((r) => r.state !== "coherent").length === 2;
    });

    // The operator retires replica-1, then tries replica-2: fixed, that second
    // removal is refused (W would be on the master alone of the three left).
    const first = await call("DELETE", `/admin/clusters/${c}/replicas/replica-1`);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const second = await call("DELETE", `/admin/clusters/${c}/replicas/replica-2`);
    console.log("remove replica-2:", second.status, JSON.stringify(second.body));
    expect(second.status).toBe(503);
    // node-0 and replica-2 hold W among the four left; the master is lost.
    expect((await call("POST", `/admin/clusters/${c}/master/lose`)).status).toBe(202);
    for (const id of ["replica-3", "replica-4"]) await nodeStub(env, c, id).setStopped(false);

    const promoted = await call<{ master: string; term: number }>(
      "POST",
      `/admin/clusters/${c}/promote`,
      { body: {} },
    );
    console.log("promote:", promoted.status, JSON.stringify(promoted.body));
    expect(promoted.status).toBe(200);
    let rows: unknown = null;
    await waitUntil("a strong read on the new master", async () => {
      const r = await query(c, "SELECT k FROM t ORDER BY k", { replica: "master" });
      if (r.status !== 200) return false;
      rows = r.body.rows;
      return true;
    });
    console.log("strong read on the new master:", JSON.stringify(rows));
    // A retry of W with its key: answered from a saved result, or committed again?
    const retry = await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('w')" }], "w");
    console.log("retry of W:", retry.status, JSON.stringify(retry.body));
    expect(rows, "the acknowledged write W survives").toEqual([{ k: "a" }, { k: "w" }]);
  }, 60_000);
});
