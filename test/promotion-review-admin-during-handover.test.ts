/**
 * Review finding (fixed: they are refused with 503 while the master is frozen):
 * admin changes during a handover.
 *
 * MasterCore.frozen is documented as "no new commit, membership or tunables
 * change is taken", but only writes and promote check it (writeRefusal);
 * patchTunables, addReplica and removeReplica do not. The handover state is
 * captured (handoverState) before the directory call; a change the old master
 * accepts after that is answered 200/201 and then silently lost: the new
 * master never sees it. An added replica is even bootstrapped by the old
 * master (a relay and a snapshot stream of term 1 that were never retired),
 * and its id is handed out again by the new master ("ids are never reused").
 *
 * The directory is held for 2 s to make the window (the directory call's
 * round trip) wide enough to hit deterministically.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ClusterDirectory } from "../durable-objects/directory";
import { call, exec, freshCluster, status, waitUntil } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function directory(c: string): DurableObjectStub<ClusterDirectory> {
  const ns = env.DIRECTORY as unknown as DurableObjectNamespace<ClusterDirectory>;
  return ns.get(ns.idFromName(c));
}

describe("review: admin changes while a handover is in flight", () => {
  it("are refused while the handover is in flight, or hold after it", async () => {
    const c = freshCluster("zz-admin");
    expect((await exec(c, [{ sql: "CREATE TABLE t (k TEXT PRIMARY KEY)" }])).status).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO t VALUES ('a')" }])).status).toBe(200);
    const held = runInDurableObject(directory(c), (_i, state) => {
      state.blockConcurrencyWhile(() => sleep(2000)).catch(() => {});
    }).catch(() => {});
    await sleep(20);
    const promote = call("POST", `/admin/clusters/${c}/promote`, {
      body: { replica: "replica-1" },
    });
    await sleep(1000);
    // While the old master waits for the directory:
    const patched = await call("PATCH", `/admin/clusters/${c}/tunables`, {
      body: { idempotency_retention_ms: 123_456 },
    });
    const added = await call("POST", `/admin/clusters/${c}/replicas`);
    const removed = await call("DELETE", `/admin/clusters/${c}/replicas/replica-4`);
    console.log(
      "during the handover:",
      patched.status,
      added.status,
      JSON.stringify(added.body),
      removed.status,
    );
    const promoted = await promote;
    await held;
    console.log("promote:", promoted.status, JSON.stringify(promoted.body));
    expect(promoted.status).toBe(200);

    const tunables = await call<Record<string, { value: unknown }>>(
      "GET",
      `/admin/clusters/${c}/tunables`,
    );
    const s = (await status(c)).body as unknown as {
      master: { id: string };
      replicas: { id: string }[];
    };
    const ids = s.replicas.map((r) => r.id).sort();
    console.log(
      "after: master",
      s.master.id,
      "replicas",
      ids,
      "idempotency_retention_ms",
      JSON.stringify(tunables.body.idempotency_retention_ms),
    );
    const again = await call("POST", `/admin/clusters/${c}/replicas`);
    console.log("next add on the new master:", again.status, JSON.stringify(again.body));

    // Each change the old master acknowledged must hold after the promotion
    // (or it should have been refused with 503, like writes are).
    if (patched.status === 200) {
      expect(tunables.body.idempotency_retention_ms?.value).toBe(123_456);
    }
    if (removed.status === 200) expect(ids).not.toContain("replica-4");
    if (added.status === 201 || added.status === 200) {
      const id = (added.body as { id: string }).id;
      expect(ids).toContain(id);
      expect((again.body as { id: string }).id).not.toBe(id);
    }
    // The replica added last is being bootstrapped: let it finish before the
    // test's storage goes, so no call between nodes is cut off mid-way.
    await waitUntil("every replica coherent", async () => {
      const now = (await status(c)).body as unknown as { replicas: { state: string }[] };
      return now.replicas.every((r) => r.state === "coherent");
    });
  });
});
