/**
 * Saved results age out by their age entries: one per result on the master,
 * one per batch on a replica (saveResults). A batch's entry may only go when
 * every result in it could go on its own: created before the cut-off and
 * answered (its commit at or below the commit point).
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { importBatchKey } from "../core/backup-protocol";
import type { SavedResult } from "../core/protocol";
import { NodeStore } from "../durable-objects/node-store";

const result = (key: string, lsn: number): SavedResult => ({
  key,
  requestHash: `h-${key}`,
  lsn,
  response: `{"lsn":${lsn}}`,
});

function inStore<T>(act: (store: NodeStore) => T): Promise<T> {
  const ns = env.NODE as unknown as DurableObjectNamespace;
  const stub = ns.get(ns.idFromName(`ages-${Math.random()}:node-0`));
  return runInDurableObject(stub, (_, state) => act(new NodeStore(state.storage.kv)));
}

describe("saved results' age entries", () => {
  it("a batch's results go together, only once the newest of them may go", async () => {
    const found = await inStore((store) => {
      store.saveResults([
        { result: result("a", 10), createdAt: 1_000 },
        { result: result("b", 11), createdAt: 1_005 },
        { result: result("c", 12), createdAt: 1_010 },
      ]);
      store.saveResult(result("single", 9), 990);
      const present = () => ["a", "b", "c", "single"].filter((k) => store.findResult(k) !== null);
      const steps: { pruned: number; present: string[] }[] = [];
      // Created too recently for the cut-off: the batch is aged by its newest (1,010).
      steps.push({ pruned: store.pruneResults(1_006, 100), present: present() });
      // Old enough, but the newest commit (12) is not answered yet: nothing of the batch goes.
      steps.push({ pruned: store.pruneResults(2_000, 11), present: present() });
      steps.push({ pruned: store.pruneResults(2_000, 12), present: present() });
      return { steps, a: store.findResult("a") };
    });
    expect(found.steps).toEqual([
      { pruned: 1, present: ["a", "b", "c"] },
      { pruned: 0, present: ["a", "b", "c"] },
      { pruned: 3, present: [] },
    ]);
    expect(found.a).toBeNull();
  });

  it("each result of a batch keeps its own head, and an import's first batch no age entry", async () => {
    const found = await inStore((store) => {
      store.saveResults([
        { result: result("x", 5), createdAt: 100 },
        { result: result(importBatchKey("imp", 0), 6), createdAt: 101 },
      ]);
      return {
        x: store.findResult("x"),
        pruned: store.pruneResults(10_000, 100),
        after: [store.findResult("x"), store.findResult(importBatchKey("imp", 0)) !== null],
      };
    });
    expect(found.x).toEqual({ key: "x", requestHash: "h-x", lsn: 5, response: '{"lsn":5}' });
    expect(found.pruned).toBe(1);
    expect(found.after).toEqual([null, true]);
  });
});
