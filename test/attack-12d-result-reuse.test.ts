/**
 * Replicas keep saved results inside their log
 * records and index them by key (`r:<key>`, with one age entry
 * `ra:<newest createdAt>:<first key>` per chunk of up to 256 records) only when
 * they truncate those records (LogKeeper.upkeep) or start as master
 * (indexWholeLog). NodeStore.pruneResults deletes `r:<name>` for every key an
 * expired age entry lists; it must look at which commit `r:<name>` now holds.
 *
 * Promise attacked: a retry (same Idempotency-Key and body) of any commit the
 * cluster acknowledged is answered from its saved result (`replayed: true`, same
 * LSN, not executed twice) by whichever node is master, within
 * idempotency_retention_ms; results are pruned only by their own age.
 *
 * The key is used twice: commit A under key K, K's result pruned once past the
 * retention (the master then accepts K again, documented), commit B under K
 * with another body. A replica's log still holds A's record. When that replica
 * indexes A (older than the retention: an age entry already expired) and then B
 * (young) in another chunk, the next prune of A's entry must not delete `r:K`,
 * which is B's result: a retry of B, inside its retention, would run B again.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { nodeObjectName } from "../durable-objects/node-rpc";
import { NodeStore } from "../durable-objects/node-store";
import { call, exec, freshCluster, patchTunables, query, waitUntil } from "./helpers";

const sleepMs = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function inNode<T>(c: string, member: string, act: (store: NodeStore) => T): Promise<T> {
  const stub = env.NODE.get(env.NODE.idFromName(nodeObjectName(c, member)));
  return runInDurableObject(stub, (_, state) => act(new NodeStore(state.storage.kv)));
}

const insert = (v: string) => [{ sql: "INSERT INTO t (v) VALUES (?)", params: [v] }];

/** Where `key` stands on `member`: its r: entry's LSN and the age entries that list it. */
async function keyState(c: string, member: string, key: string) {
  const stub = env.NODE.get(env.NODE.idFromName(nodeObjectName(c, member)));
  return runInDurableObject(stub, (_, state) => {
    const kv = state.storage.kv;
    const ages: string[] = [];
    for (const [k, v] of kv.list<number | { lsn: number; keys: string[] }>({ prefix: "ra:" })) {
      const keys = typeof v === "number" ? [k.slice(k.indexOf(":", 3) + 1)] : v.keys;
      if (keys.includes(key))
        ages.push(
          `${k.slice(3, 19)} newest LSN ${typeof v === "number" ? v : v.lsn} (${keys.length} keys)`,
        );
    }
    return { resultLsn: new NodeStore(kv).findResult(key)?.lsn ?? null, ages };
  });
}

async function count(c: string, v: string): Promise<number> {
  const res = await query(c, "SELECT count(*) AS n FROM t WHERE v = ?", { params: [v] });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return Number((res.body.rows[0] as { n: unknown }).n);
}

/** Commits K with body Y once the master freed K (pruned A's result): until then 409 REUSED. */
async function reuseOnceFreed(c: string, key: string, body: string, everyMs: number) {
  for (let i = 0; i < 120; i++) {
    const res = await exec(c, insert(body), key);
    if (res.status === 200) {
      expect(res.body.replayed, "a fresh commit, not a replay").toBeUndefined();
      return res.body.lsn as number;
    }
    expect((res.body.error as { code: string }).code).toBe("IDEMPOTENCY_KEY_REUSED");
    await sleepMs(everyMs);
  }
  throw new Error("the master never freed the key");
}

describe("attack 12d: a key used again after its retention, and the replica's index of the log", () => {
  it("a replica that truncated both records, then pruned after a restart, must still hold the newer commit's result", async () => {
    const c = freshCluster("a12d-reuse-trunc");
    const R = 8_000;
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status,
    ).toBe(200);
    expect(
      (
        await patchTunables(c, {
          commit_timeout_ms: 5000,
          idempotency_retention_ms: R,
          idle_after_ms: 1000,
          log_retain_records: 0,
          debug_fault_injection: true,
        })
      ).status,
    ).toBe(200);
    const key = `${c}-K`;
    const a = await exec(c, insert("X"), key);
    expect(a.status).toBe(200);
    const aLsn = a.body.lsn as number;
    const truncatedOn = async (lsn: number) => {
      await waitUntil(
        `replica-1 truncated through ${lsn}`,
        async () => {
          expect((await exec(c, insert("filler"))).status).toBe(200);
          return (await inNode(c, "replica-1", (s) => s.truncatedThrough())) >= lsn;
        },
        30_000,
        300,
      );
    };
    await truncatedOn(aLsn);
    const bLsn = await reuseOnceFreed(c, key, "Y", 1500);
    const bAt = Date.now();
    await truncatedOn(bLsn);
    // The replica restarts (its prune clock with it) and prunes at its next batch.
    const crashed = await call("POST", `/admin/clusters/${c}/replicas/replica-1/crash`, {
      body: {},
    });
    expect(crashed.status, JSON.stringify(crashed.body)).toBe(202);
    await sleepMs(500);
    await waitUntil(
      "replica-1 applies again",
      async () =>
        (await exec(c, insert("filler"))).status === 200 &&
        (await inNode(c, "replica-1", (s) => s.lastLsn())) > bLsn + 2,
      20_000,
      300,
    );
    await sleepMs(1000);
    expect(Date.now() - bAt, "still inside B's retention").toBeLessThan(R - 1000);
    const kept = await keyState(c, "replica-1", key);
    const promoted = await call("POST", `/admin/clusters/${c}/promote`, {
      body: { replica: "replica-1" },
    });
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
    const retry = await exec(c, insert("Y"), key);
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(
      retry.body.replayed,
      `retry of B (LSN ${bLsn}, A at LSN ${aLsn}) ${Date.now() - bAt} ms after B committed, retention ${R} ms; ` +
        `replica-1's K before its promotion ${JSON.stringify(kept)}`,
    ).toBe(true);
    expect(retry.body.lsn).toBe(bLsn);
    expect(await count(c, "Y")).toBe(1);
  }, 120_000);
});
