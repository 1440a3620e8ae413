/**
 * Saved results ride in replicas' log records and are
 * indexed by key at truncation or when a node starts as master.
 *
 * Promises attacked: a retry (same Idempotency-Key, same body) of any commit
 * the cluster acknowledged is answered from its saved result (replayed, same
 * LSN, run once) by whichever node is master, within idempotency_retention_ms:
 * after promotions back and forth, a lost master, truncation before promotion,
 * a replica rebuilt from a snapshot (served by a promoted master) and promoted;
 * a key reused with another body is IDEMPOTENCY_KEY_REUSED; and results are
 * pruned only by age (a result the cluster pruned past its retention does not
 * come back on a newly promoted master).
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { indexWholeLog, markLogResultsUnindexed } from "../durable-objects/log-results";
import { nodeObjectName } from "../durable-objects/node-rpc";
import { NodeStore } from "../durable-objects/node-store";
import { bodyBytes, encodeBody } from "../core/log-codec";
import { call, exec, freshCluster, patchTunables, query, status, waitUntil } from "./helpers";
import { addReplica, converged } from "./node-images";

const sleepMs = (ms: number) => new Promise((r) => setTimeout(r, ms));
const insert = (v: string) => [{ sql: "INSERT INTO t (v) VALUES (?)", params: [v] }];

async function setup(prefix: string, tunables?: Record<string, unknown>): Promise<string> {
  const c = freshCluster(prefix);
  expect((await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status).toBe(
    200,
  );
  if (tunables) {
    const p = await patchTunables(c, tunables);
    expect(p.status, JSON.stringify(p.body)).toBe(200);
  }
  return c;
}

/** Commits `n` keyed inserts; returns key -> LSN. */
async function writeKeyed(c: string, tag: string, n: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const key = `${c}-${tag}-${i}`;
    const res = await exec(c, insert(key), key);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    out.set(key, res.body.lsn as number);
  }
  return out;
}

async function allReplayed(c: string, keys: Map<string, number>, when: string): Promise<void> {
  for (const [key, lsn] of keys) {
    const res = await exec(c, insert(key), key);
    expect(res.status, `${when}: ${key} ${JSON.stringify(res.body)}`).toBe(200);
    expect(res.body.replayed, `${when}: ${key} (LSN ${lsn}) replayed`).toBe(true);
    expect(res.body.lsn, `${when}: ${key}`).toBe(lsn);
    const reused = await exec(c, insert(`${key}-other`), key);
    expect(reused.status, `${when}: ${key} with another body`).toBe(409);
  }
  const q = await query(c, "SELECT v, count(*) AS n FROM t GROUP BY v HAVING n > 1");
  expect(q.body.rows, `${when}: nothing ran twice`).toEqual([]);
}

const promote = async (c: string, body: Record<string, unknown>) => {
  const p = await call<{ master: string; term: number }>("POST", `/admin/clusters/${c}/promote`, {
    body,
  });
  expect(p.status, JSON.stringify(p.body)).toBe(200);
  return p.body.master;
};

async function allCoherent(c: string) {
  await waitUntil(
    "every replica coherent at the master's LSN",
    async () => {
      const s = await status(c);
      return s.body.replicas.every(
        (r) => r.state === "coherent" && r.ackedLsn === s.body.master.lsn,
      );
    },
    30_000,
  );
}

describe("attack 12d: saved results across promotions", () => {
  it("promotions back and forth: every term's keys replay on every later master", async () => {
    const c = await setup("a12d-holds-pingpong");
    const all = new Map<string, number>();
    const order = ["replica-1", "node-0", "replica-2", "replica-1"];
    for (const [i, to] of order.entries()) {
      for (const [k, v] of await writeKeyed(c, `t${i}`, 5)) all.set(k, v);
      await allCoherent(c);
      expect(await promote(c, { replica: to })).toBe(to);
      await allReplayed(c, all, `after promotion ${i + 1} to ${to}`);
    }
  }, 120_000);

  it("a lost master, then promotion: the survivors' logs answer every acknowledged commit", async () => {
    const c = await setup("a12d-holds-lost", { debug_fault_injection: true });
    const keys = await writeKeyed(c, "a", 12);
    const lose = await call("POST", `/admin/clusters/${c}/master/lose`);
    expect(lose.status, JSON.stringify(lose.body)).toBe(202);
    await promote(c, {});
    await allReplayed(c, keys, "after the lost master");
  }, 120_000);

  it("records truncated on the replica before its promotion (log_retain_records 2)", async () => {
    const c = await setup("a12d-holds-trunc", { log_retain_records: 2 });
    const keys = await writeKeyed(c, "a", 30);
    for (let i = 0; i < 10; i++) expect((await exec(c, insert(`f${i}`))).status).toBe(200);
    await converged(c);
    const stub = env.NODE.get(env.NODE.idFromName(nodeObjectName(c, "replica-2")));
    await waitUntil(
      "replica-2 truncated",
      async () =>
        runInDurableObject(stub, (_, s) => new NodeStore(s.storage.kv).truncatedThrough() > 30),
      30_000,
      200,
    );
    await promote(c, { replica: "replica-2" });
    await allReplayed(c, keys, "after truncation and promotion");
  }, 120_000);

  it("a replica rebuilt from the snapshot of a promoted master, then promoted itself", async () => {
    const c = await setup("a12d-holds-snap");
    const keys = await writeKeyed(c, "a", 8);
    await allCoherent(c);
    await promote(c, { replica: "replica-1" });
    for (const [k, v] of await writeKeyed(c, "b", 4)) keys.set(k, v);
    const added = await addReplica(c);
    for (const [k, v] of await writeKeyed(c, "c", 4)) keys.set(k, v);
    await allCoherent(c);
    expect(await promote(c, { replica: added })).toBe(added);
    await allReplayed(
      c,
      keys,
      `after ${added} (rebuilt from the promoted master's snapshot) was promoted`,
    );
  }, 120_000);

  it("a result pruned past its retention does not come back on a promoted master", async () => {
    const R = 5000;
    const c = await setup("a12d-holds-resurrect", {
      commit_timeout_ms: 5000,
      idempotency_retention_ms: R,
    });
    const key = `${c}-K`;
    expect((await exec(c, insert("X"), key)).status).toBe(200);
    const aAt = Date.now();
    const master = env.NODE.get(env.NODE.idFromName(nodeObjectName(c, "node-0")));
    await waitUntil(
      "the master pruned K's result",
      async () => {
        expect((await exec(c, insert("poke"))).status).toBe(200);
        return runInDurableObject(
          master,
          (_, s) => new NodeStore(s.storage.kv).findResult(key) === null,
        );
      },
      30_000,
      500,
    );
    // Past K's retention, writes flowing. replica-1's log still holds K's record
    // (and its own pruning, once a minute, may not have run): the new master
    // must neither index that result nor keep one its replica side saved.
    while (Date.now() < aAt + R + 1500) {
      expect((await exec(c, insert("poke"))).status).toBe(200);
      await sleepMs(300);
    }
    await promote(c, { replica: "replica-1" });
    // K is free again: the cluster pruned its result by age. Another body is a new commit.
    const res = await exec(c, insert("Y"), key);
    expect(res.status, `K reused after the cluster pruned it: ${JSON.stringify(res.body)}`).toBe(
      200,
    );
    expect(res.body.replayed).toBeUndefined();
  }, 60_000);
});

describe("attack 12d: indexing a whole log at a master's start", () => {
  it("a replica log of 10 000 keyed records (log_retain_records' default) is indexed within 2 s", async () => {
    const ns = env.NODE as unknown as DurableObjectNamespace;
    const stub = ns.get(ns.idFromName(`a12d-index-${Math.random()}:node-0`));
    const ms = await runInDurableObject(stub, (_, state) => {
      const store = new NodeStore(state.storage.kv);
      let end = 0;
      const response = JSON.stringify({
        lsn: 0,
        results: [{ rowsWritten: 1, lastRowId: 1 }],
        bookmark: "b1.1",
      });
      state.storage.transactionSync(() => {
        for (let lsn = 1; lsn <= 10_000; lsn++) {
          const result = {
            key: `key-${lsn}-${"x".repeat(24)}`,
            requestHash: "h".repeat(64),
            lsn,
            response,
          };
          const body = encodeBody({
            entries: [
              {
                kind: "rows",
                changes: [{ t: "t", op: "I", nk: `i${lsn}`, img: `i${lsn}\u001ftvalue` }],
              },
            ],
            result,
          } as never);
          end += bodyBytes(body);
          store.appendLog({ lsn, term: 1, ts: 1_000 + lsn, end }, body, bodyBytes(body), []);
        }
        markLogResultsUnindexed(store);
      });
      const t0 = performance.now();
      const saved = indexWholeLog(state.storage, store);
      const took = performance.now() - t0;
      expect(saved).toBe(10_000);
      return took;
    });
    console.log(`indexWholeLog of 10 000 records: ${ms.toFixed(0)} ms`);
    expect(ms).toBeLessThan(2000);
  }, 60_000);
});
