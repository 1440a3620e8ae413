/**
 * Attack: two DELETEs of one name that overlap, the second one's last step
 * (directory.forget) landing after the first has finished and the name's new
 * cluster has begun taking writes.
 *
 * forget() (durable-objects/directory.ts) replaces whatever record is there
 * with firstRecord(term + 1), whether or not it still says `deleting`. So the
 * late forget moves the directory of the *running* new cluster to term T+2
 * naming node-0, while node-0 is master of T+1: its next publish or handover
 * is refused, and once it restarts stillMaster (node-host.ts) sees a later
 * term naming... itself, with a stored term, and steps down to replica: the
 * directory names a master that is a replica, and no write is taken again.
 *
 * Promise: DELETE frees the name and its next use is a working cluster; no
 * acknowledged write is lost.
 */
import { describe, expect, it } from "vitest";
import { deleteCluster } from "../workers/cluster-delete";
import { deleteByName, envHolding, writeEventually } from "./delete-helpers";
import { exec, freshCluster, patchTunables, query, status, waitUntil } from "./helpers";

describe("two overlapping DELETEs, the name used in between", () => {
  it("leave a working cluster that keeps what it acknowledged", async () => {
    const c = freshCluster("att19b-ddel");
    expect((await exec(c, [{ sql: "CREATE TABLE t (v)" }])).status).toBe(200);
    let open = () => {};
    const gate = new Promise<void>((r) => {
      open = r;
    });
    let reached = () => {};
    const midway = new Promise<void>((r) => {
      reached = r;
    });
    // DELETE B: marks, empties node-0 and the others, and waits on replica-4.
    const second = deleteCluster(envHolding(`${c}:replica-4`, "destroy", gate, reached), c);
    await midway;
    // DELETE A: runs whole, and frees the name.
    const first = await deleteByName(c);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    // The name's next use: a new cluster, which acknowledges a write.
    const made = await writeEventually(c, "CREATE TABLE fresh (v)");
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const acked = await exec(c, [{ sql: "INSERT INTO fresh VALUES ('acked')" }]);
    expect(acked.status, JSON.stringify(acked.body)).toBe(200);
    // DELETE B finishes.
    open();
    await second.catch(() => undefined);
    // The name must work: either the write is still there, or (had B deleted it) the
    // cluster is empty and working; never a directory naming a master that is not one.
    // A tunables change (it publishes in the directory), as any operator may make.
    await patchTunables(c, { heartbeat_ms: 100 });
    const after = await writeEventually(c, "CREATE TABLE IF NOT EXISTS later (v)");
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    const s = await status(c);
    expect(s.status, JSON.stringify(s.body)).toBe(200);
    await waitUntil(
      "a strong read",
      async () => {
        const r = await query(c, "SELECT count(*) AS n FROM sqlite_master", {
          consistency: "strong",
        });
        return r.status === 200;
      },
      5_000,
    );
  });
});
