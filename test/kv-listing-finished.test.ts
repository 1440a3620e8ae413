/**
 * A KV listing is a SQLite statement: one left unfinished (a loop that returns
 * or breaks inside it) keeps SQLite from dropping any table on the node
 * (SQLITE_LOCKED). A master that started with leftover snapshot shadows could
 * not drop them after asking for its last LSN. Every NodeStore read that lists
 * must leave DROP TABLE possible.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { bodyBytes, encodeBody } from "../core/log-codec";
import { NodeStore } from "../durable-objects/node-store";

describe("no KV listing is left open", () => {
  it("after every read of the log and the saved results, a table can be dropped", async () => {
    const ns = env.NODE as unknown as DurableObjectNamespace;
    const stub = ns.get(ns.idFromName(`kv-listing-${Math.random()}:node-0`));
    const outcomes = await runInDurableObject(stub, (_, state) => {
      const store = new NodeStore(state.storage.kv);
      let end = 0;
      for (let lsn = 1; lsn <= 20; lsn++) {
        const result = { key: `k${lsn}`, requestHash: "h", lsn, response: "x".repeat(100) };
        const body = encodeBody({ entries: [], result });
        end += bodyBytes(body);
        store.appendLog({ lsn, term: 1, ts: lsn, end }, body, bodyBytes(body), []);
        store.saveResult(result, lsn);
      }
      const reads: [string, () => unknown][] = [
        ["lastLsn", () => store.lastLsn()],
        ["readLog cut by bytes", () => store.readLog(1, 10, 1)],
        ["hasResultUnder", () => store.hasResultUnder("k")],
        ["readResults cut by bytes", () => store.readResults(null, 50, 100)],
        ["pruneResults cut by count", () => store.pruneResults(1_000, 100, 1)],
      ];
      const sql = state.storage.sql;
      return reads.map(([name, read]) => {
        read();
        try {
          sql.exec("CREATE TABLE IF NOT EXISTS doomed (a)");
          sql.exec("DROP TABLE doomed");
          return `${name}: dropped`;
        } catch (error) {
          return `${name}: ${String(error)}`;
        }
      });
    });
    expect(outcomes).toEqual([
      "lastLsn: dropped",
      "readLog cut by bytes: dropped",
      "hasResultUnder: dropped",
      "readResults cut by bytes: dropped",
      "pruneResults cut by count: dropped",
    ]);
  });
});
