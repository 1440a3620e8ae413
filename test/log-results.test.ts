/**
 * A replica keeps saved results inside its log records and indexes them by key
 * only when it truncates them or starts as master (log-results.ts): every
 * result a record carries must then be found by its key, whatever the chunk
 * boundaries, and only the flag a replica sets makes a master index its log.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { bodyBytes, encodeBody } from "../core/log-codec";
import {
  indexLogResults,
  indexWholeLog,
  markLogResultsUnindexed,
} from "../durable-objects/log-results";
import { NodeStore } from "../durable-objects/node-store";

function inObject<T>(act: (store: NodeStore, storage: DurableObjectStorage) => T): Promise<T> {
  const ns = env.NODE as unknown as DurableObjectNamespace;
  const stub = ns.get(ns.idFromName(`log-results-${Math.random()}:node-0`));
  return runInDurableObject(stub, (_, state) =>
    act(new NodeStore(state.storage.kv), state.storage),
  );
}

/** `count` records from LSN 1, every third without a key (no result). */
function logSome(store: NodeStore, count: number): string[] {
  const keys: string[] = [];
  let end = 0;
  for (let lsn = 1; lsn <= count; lsn++) {
    const key = lsn % 3 === 0 ? undefined : `k${lsn}`;
    const result =
      key === undefined
        ? undefined
        : { key, requestHash: `h${lsn}`, lsn, response: `{"lsn":${lsn}}` };
    const body = encodeBody({ entries: [], ...(result ? { result } : {}) });
    end += bodyBytes(body);
    store.appendLog({ lsn, term: 1, ts: 1_000 + lsn, end }, body, bodyBytes(body), []);
    if (key !== undefined) keys.push(key);
  }
  return keys;
}

describe("saved results kept in the log", () => {
  it("a master start indexes every result of a replica's log, across chunks, once", async () => {
    const seen = await inObject((store, storage) => {
      const keys = logSome(store, 2_300);
      const before = keys.filter((k) => store.findResult(k) !== null).length;
      // No flag (a node that was never a replica): nothing to index.
      const unflagged = indexWholeLog(storage, store);
      markLogResultsUnindexed(store);
      const indexed = indexWholeLog(storage, store);
      const again = indexWholeLog(storage, store);
      const found = keys.map((k) => store.findResult(k));
      return { keys: keys.length, before, unflagged, indexed, again, found };
    });
    expect(seen.before).toBe(0);
    expect(seen.unflagged).toBe(0);
    expect(seen.indexed).toBe(seen.keys);
    expect(seen.again).toBe(0);
    seen.found.forEach((found, i) => {
      expect(found, `result ${i}`).not.toBeNull();
      expect(found?.response).toBe(`{"lsn":${found?.lsn}}`);
      expect(found?.requestHash).toBe(`h${found?.lsn}`);
    });
  });

  it("indexes exactly the records of the range it is given", async () => {
    const seen = await inObject((store) => {
      logSome(store, 600);
      const saved = indexLogResults(store, 250, 520);
      const at = (lsn: number) => store.findResult(`k${lsn}`)?.lsn ?? null;
      return { saved, at250: at(250), at251: at(251), at520: at(520), at521: at(521) };
    });
    // LSNs 251..520 hold 270 records, 90 of them without a key.
    expect(seen).toEqual({ saved: 180, at250: null, at251: 251, at520: 520, at521: null });
  });

  it("the results indexed age out as the master's do", async () => {
    const seen = await inObject((store) => {
      const keys = logSome(store, 30);
      indexLogResults(store, 0, 30);
      const pruned = store.pruneResults(10_000, 30);
      return { keys: keys.length, pruned, left: keys.filter((k) => store.findResult(k)).length };
    });
    expect(seen).toEqual({ keys: 20, pruned: 20, left: 0 });
  });

  it("a key used again holds the later commit's result until that one's own age", async () => {
    // Commit A under K, K freed once A's result aged out, commit B under K with
    // another body: a replica's log holds both, and indexing it gives A's
    // chunk an age entry listing K, older than B's.
    const seen = await inObject((store) => {
      let end = 0;
      const log = (lsn: number, ts: number, key?: string) => {
        const result =
          key === undefined
            ? undefined
            : { key, requestHash: `h${lsn}`, lsn, response: `{"lsn":${lsn}}` };
        const body = encodeBody({ entries: [], ...(result ? { result } : {}) });
        end += bodyBytes(body);
        store.appendLog({ lsn, term: 1, ts, end }, body, bodyBytes(body), []);
      };
      log(1, 1_000, "K");
      for (let lsn = 2; lsn <= 300; lsn++) log(lsn, 1_000 + lsn);
      log(301, 50_000, "K");
      indexLogResults(store, 0, 301);
      const afterIndex = store.findResult("K")?.lsn ?? null;
      store.pruneResults(10_000, 301);
      const pastA = store.findResult("K")?.lsn ?? null;
      store.pruneResults(60_000, 301);
      const pastB = store.findResult("K")?.lsn ?? null;
      return { afterIndex, pastA, pastB };
    });
    expect(seen).toEqual({ afterIndex: 301, pastA: 301, pastB: null });
  });

  it("results of one chunk made seconds apart age each by its own time, within a second", async () => {
    const seen = await inObject((store) => {
      let end = 0;
      for (let lsn = 1; lsn <= 50; lsn++) {
        // One keyed record every 100 ms: 5 s in one chunk of records.
        const result = { key: `k${lsn}`, requestHash: "h", lsn, response: "{}" };
        const body = encodeBody({ entries: [], result });
        end += bodyBytes(body);
        store.appendLog({ lsn, term: 1, ts: lsn * 100, end }, body, bodyBytes(body), []);
      }
      indexLogResults(store, 0, 50);
      // Pruning those made before 3.5 s: none younger goes (never early), and none
      // made before 2.5 s stays (kept at most a second past its own age).
      store.pruneResults(3_500, 50);
      const left = Array.from({ length: 50 }, (_, i) => store.findResult(`k${i + 1}`) !== null);
      return { first: left.indexOf(true) + 1, kept: left.filter(Boolean).length };
    });
    expect(seen.first).toBeGreaterThanOrEqual(25);
    expect(seen.first).toBeLessThanOrEqual(35);
    expect(seen.kept).toBe(50 - seen.first + 1);
  });
});
