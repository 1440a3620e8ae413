/**
 * Review attack: the directory call of a handover fails without moving the
 * directory (the directory object was reset, as any Durable Object may be).
 *
 * master/handover.ts then steps the old master down "and the restarted node
 * learns the truth from the directory before it serves anything". But the
 * restarted node is a REPLICA (stepDown persisted m:role = replica): nothing
 * makes it master again. The directory still names node-0 in term 1, with no
 * handover record, so the front door's takeOver on node-0 throws
 * "term 1 has no handover to take". The cluster has no master, for good.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ClusterDirectory } from "../durable-objects/directory";
import { call, exec, freshCluster, query } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function directory(c: string): DurableObjectStub<ClusterDirectory> {
  const ns = env.DIRECTORY as unknown as DurableObjectNamespace<ClusterDirectory>;
  return ns.get(ns.idFromName(c));
}

describe("review: the directory fails during a handover", () => {
  it("leaves the cluster with no master at all", async () => {
    const c = freshCluster("zz-dir");
    expect((await exec(c, [{ sql: "CREATE TABLE t (k TEXT PRIMARY KEY)" }])).status).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO t VALUES ('a')" }], "ka")).status).toBe(200);
    const before = await directory(c).read();
    expect(before).toMatchObject({ term: 1, master: "node-0" });
    // The directory object is reset while the handover's compare-and-set waits on it.
    const injected = runInDurableObject(directory(c), (_instance, state) => {
      // Hold the directory's input for a moment, then reset it, as the platform
      // may at any time (the same ctx.abort() the master/crash fault route uses).
      state
        .blockConcurrencyWhile(async () => {
          await sleep(300);
          state.abort("injected: the directory object was reset");
        })
        .catch(() => {});
    }).catch((error) => console.log("injector:", String(error)));
    await sleep(20);
    try {
      const promoted = await call("POST", `/admin/clusters/${c}/promote`, {
        body: { replica: "replica-1" },
      });
      console.log("promote:", promoted.status, JSON.stringify(promoted.body));
    } catch (error) {
      console.log("promote threw:", String(error));
    }
    await sleep(500);
    await injected;
    const record = await directory(c).read();
    console.log("directory after:", JSON.stringify(record));
    // Give the cluster every chance to recover.
    let last: { status: number; body: unknown } = { status: 0, body: null };
    const until = Date.now() + 8_000;
    while (Date.now() < until) {
      last = await exec(c, [{ sql: "INSERT INTO t VALUES ('b')" }], "kb");
      if (last.status === 200) break;
      await sleep(200);
    }
    const read = await query(c, "SELECT count(*) AS n FROM t", { replica: "master" });
    console.log("write:", last.status, JSON.stringify(last.body), "read:", read.status);
    // A refused/failed promotion must change nothing: writes continue.
    expect(last.status, JSON.stringify(last.body)).toBe(200);
  });
});
