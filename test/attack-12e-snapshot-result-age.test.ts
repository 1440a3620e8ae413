/**
 * Promise attacked (docs/architecture.md, "Terms, the directory and
 * promotion"): saved results are pruned only by their own age; "Results older
 * than idempotency_retention_ms are not indexed, and a new master prunes before
 * it answers: a key the old master freed is free on the new one."
 *
 * What breaks: a replica built from a snapshot saves every result the snapshot
 * brings with createdAt = the install time (replica/role.ts, phase "results":
 * `saveResult(result, now)`), not the commit's time. Promoted, it keeps (and
 * answers from) a result the old master had already pruned by its age: the
 * key, free on the old master, is refused IDEMPOTENCY_KEY_REUSED on the new.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { nodeObjectName } from "../durable-objects/node-rpc";
import { NodeStore } from "../durable-objects/node-store";
import {
  addReplicaRetrying,
  call,
  exec,
  freshCluster,
  patchTunables,
  status,
  waitUntil,
} from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function resultLsn(c: string, member: string, key: string): Promise<number | null> {
  const stub = env.NODE.get(env.NODE.idFromName(nodeObjectName(c, member)));
  return runInDurableObject(
    stub,
    (_, state) => new NodeStore(state.storage.kv).findResult(key)?.lsn ?? null,
  );
}

const insert = (v: string) => [{ sql: "INSERT INTO t (v) VALUES (?)", params: [v] }];

describe("attack 12e: results a snapshot brings keep their own age", () => {
  it("a key the old master freed is free on a promoted snapshot-built replica", async () => {
    const c = freshCluster("a12e-snap-age");
    const R = 5000;
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status,
    ).toBe(200);
    const tuned = await patchTunables(c, {
      rep_timeout_ms: 2000,
      commit_timeout_ms: 2000,
      idempotency_retention_ms: R,
      debug_fault_injection: true,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    const key = `${c}-K`;
    const a = await exec(c, insert("A"), key);
    expect(a.status).toBe(200);
    const t0 = Date.now();
    await sleep(2500);
    // A new replica, built from a snapshot that holds K's result.
    const added = await addReplicaRetrying(c);
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    const id = added.body.id;
    await waitUntil(
      `${id} coherent`,
      async () => {
        const s = await status(c);
        return s.body.replicas.some(
          (r) => r.id === id && r.state === "coherent" && r.ackedLsn === s.body.master.lsn,
        );
      },
      20_000,
      100,
    );
    expect(await resultLsn(c, id, key), "the snapshot brought K's result").toBe(a.body.lsn);
    // Past K's retention: the master restarts, and prunes before it answers.
    await sleep(Math.max(0, t0 + R + 300 - Date.now()));
    const crashed = await call("POST", `/admin/clusters/${c}/master/crash`, { body: {} });
    expect(crashed.status, JSON.stringify(crashed.body)).toBe(202);
    await waitUntil("the master back", async () => (await status(c)).status === 200, 10_000, 50);
    expect(await resultLsn(c, "node-0", key), "the old master freed K").toBeNull();
    const promoted = await call("POST", `/admin/clusters/${c}/promote`, { body: { replica: id } });
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
    const elapsed = Date.now() - t0;
    const b = await exec(c, insert("B"), key);
    expect(
      b.status,
      `K reused ${elapsed} ms after its commit (retention ${R} ms), freed on node-0: ${JSON.stringify(b.body)}`,
    ).toBe(200);
    expect(b.body.replayed).toBeUndefined();
  }, 60_000);
});
