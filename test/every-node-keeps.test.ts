/**
 * Every node keeps what a master needs: the log (same LSNs, terms, times,
 * byte positions and entries as the master's) and the saved results of keyed
 * commits, inside their records and, once truncated, by key (log-results.ts),
 * so a promoted replica can answer a retry of a commit the old master made.
 * Read straight from each node's storage, not through the front door.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { FIRST_MASTER } from "../core/members";
import type { LogRecord, SavedResult } from "../core/protocol";
import { nodeObjectName } from "../durable-objects/node-rpc";
import { NodeStore } from "../durable-objects/node-store";
import { exec, freshCluster, patchTunables, status, waitUntil } from "./helpers";
import { addReplica, converged } from "./node-images";

const REPLICAS = ["replica-1", "replica-2", "replica-3", "replica-4"];

interface Kept {
  log: LogRecord[];
  lastLsn: number;
  truncatedThrough: number;
  results: (SavedResult | null)[];
}

async function kept(c: string, member: string, keys: string[]): Promise<Kept> {
  const stub = env.NODE.get(env.NODE.idFromName(nodeObjectName(c, member)));
  return runInDurableObject(stub, (_, state) => {
    const store = new NodeStore(state.storage.kv);
    return {
      log: store.readLog(1, 100_000, 100_000_000),
      lastLsn: store.lastLsn(),
      truncatedThrough: store.truncatedThrough(),
      results: keys.map((key) => store.findResult(key)),
    };
  });
}

async function writeSome(c: string, from: number, count: number): Promise<string[]> {
  const keys: string[] = [];
  for (let i = from; i < from + count; i++) {
    const key = i % 3 === 0 ? undefined : `${c}-k${i}`;
    const res = await exec(
      c,
      [
        { sql: "INSERT INTO t (v, big) VALUES (?, ?)", params: [`v${i}`, "9007199254740993"] },
        { sql: "UPDATE t SET n = n + 1 WHERE id % 2 = 0" },
      ],
      key,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    if (key !== undefined) keys.push(key);
  }
  return keys;
}

describe("every node keeps the log and the saved results, 4 replicas", () => {
  it("each replica holds the master's records and saved results, exactly", async () => {
    const c = freshCluster("keeps");
    const ddl = await exec(c, [
      { sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, big INTEGER, n INTEGER DEFAULT 0)" },
    ]);
    expect(ddl.status).toBe(200);
    const keys = await writeSome(c, 1, 30);
    await converged(c);
    const master = await kept(c, FIRST_MASTER, keys);
    expect(master.log.length).toBe(31);
    expect(master.results.every((r) => r !== null)).toBe(true);
    // The master's saved result is what the client was answered, and it rides in its record.
    const keyed = master.log.filter((r) => r.result !== undefined);
    expect(keyed.map((r) => r.result?.key).sort()).toEqual([...keys].sort());
    for (const id of REPLICAS) {
      const replica = await kept(c, id, keys);
      expect(replica.lastLsn, id).toBe(master.lastLsn);
      expect(replica.log, `${id}'s log`).toEqual(master.log);
      // Its results are in its records (the log above); the lookup by key waits
      // for their truncation, or for the replica to start as master.
      expect(replica.results, `${id}'s saved results by key`).toEqual(keys.map(() => null));
    }
    // Each record is stored once: its head holds its position, the body the rest.
    for (const id of [FIRST_MASTER, ...REPLICAS]) {
      const stub = env.NODE.get(env.NODE.idFromName(nodeObjectName(c, id)));
      const heads = await runInDurableObject(stub, (_, state) =>
        [...state.storage.kv.list<{ meta: Record<string, unknown> }>({ prefix: "l:" })].map(
          ([, value]) => Object.keys(value.meta).sort(),
        ),
      );
      expect(heads.length, id).toBe(31);
      for (const keys of heads) expect(keys, id).toEqual(["bytes", "end", "lsn", "term", "ts"]);
    }
  });

  it("a replica's log follows the master's truncation point and keeps its newest record", async () => {
    const c = freshCluster("keeps-trunc");
    expect(
      (
        await exec(c, [
          {
            sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, big INTEGER, n INTEGER DEFAULT 0)",
          },
        ])
      ).status,
    ).toBe(200);
    expect((await patchTunables(c, { log_retain_records: 5 })).status).toBe(200);
    const keys = await writeSome(c, 1, 40);
    await converged(c);
    await waitUntil("the master truncated its log", async () => {
      return (
        ((await status(c)).body.master as unknown as { truncatedThrough: number })
          .truncatedThrough >= 30
      );
    });
    // A heartbeat carries the master's truncation point to every replica.
    const master = await kept(c, FIRST_MASTER, []);
    await waitUntil("every replica truncated as far", async () => {
      for (const id of REPLICAS) {
        if ((await kept(c, id, [])).truncatedThrough < master.truncatedThrough) return false;
      }
      return true;
    });
    const saved = (await kept(c, FIRST_MASTER, keys)).results;
    for (const id of REPLICAS) {
      const replica = await kept(c, id, keys);
      expect(replica.lastLsn, id).toBe(master.lastLsn);
      expect(replica.log.length, id).toBeGreaterThanOrEqual(1);
      expect(replica.log, id).toEqual(master.log.filter((r) => r.lsn > replica.truncatedThrough));
      // Every result is kept: by key once its record was truncated, else in its record.
      const inLog = new Map(replica.log.map((r) => [r.result?.key, r.result]));
      keys.forEach((key, i) => {
        const mine = replica.results[i];
        const theirs = saved[i];
        expect(theirs, `${key} on the master`).not.toBeNull();
        if (theirs && theirs.lsn <= replica.truncatedThrough)
          expect(mine, `${id} ${key}`).toEqual(theirs);
        else expect(inLog.get(key), `${id} ${key} in its log`).toEqual(theirs);
      });
      expect(
        replica.results.filter((r) => r !== null).length,
        `${id}: results indexed at truncation`,
      ).toBeGreaterThan(0);
    }
  });

  it("a replica built from a snapshot starts its log at the snapshot's LSN and byte position, with its saved results", async () => {
    const c = freshCluster("keeps-snap");
    expect(
      (
        await exec(c, [
          {
            sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, big INTEGER, n INTEGER DEFAULT 0)",
          },
        ])
      ).status,
    ).toBe(200);
    const before = await writeSome(c, 1, 12);
    const added = await addReplica(c);
    await converged(c);
    const keys = [...before, ...(await writeSome(c, 100, 6))];
    await converged(c);
    const master = await kept(c, FIRST_MASTER, keys);
    const replica = await kept(c, added, keys);
    expect(replica.truncatedThrough).toBeGreaterThanOrEqual(13);
    expect(replica.log).toEqual(master.log.filter((r) => r.lsn > replica.truncatedThrough));
    // The snapshot brought the saved results of the commits it holds, by key; the
    // later ones are in its records.
    keys.forEach((key, i) => {
      const theirs = master.results[i] ?? null;
      expect(theirs, key).not.toBeNull();
      if (theirs !== null && theirs.lsn <= replica.truncatedThrough) {
        expect(replica.results[i], key).toEqual(theirs);
      } else {
        expect(replica.results[i], key).toBeNull();
        expect(replica.log.find((r) => r.lsn === theirs?.lsn)?.result, key).toEqual(theirs);
      }
    });
    expect(replica.results.filter((r) => r !== null).length).toBe(before.length);
    // Byte positions continue the master's, so lag in bytes means the same on every node.
    expect(replica.log.at(-1)?.end).toBe(master.log.at(-1)?.end);
  });
});
