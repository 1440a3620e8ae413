/**
 * Attack: a write that reaches the front door while a DELETE is under way,
 * on a cluster whose master was handed over before its first write (so the
 * directory's handover record says lastLsn 0).
 *
 * The DELETE empties the master (replica-1) first, then the others. A write
 * in between meets an empty replica-1, which answers NOT_MASTER; the front
 * door then tells the member the directory names to take over, and
 * `takeOverNow` (durable-objects/node-host.ts) never looks at `deleting`: an empty
 * log is "caught up" with lastLsn 0, so replica-1 installs the handover and
 * is master of term 2 again, after its storage was deleted. Once the
 * directory forgets the name, the fresh term-1 cluster meets a member that
 * is master of term 2 (stillMaster: directory term 1 < stored term 2).
 *
 * Promise: after DELETE every member is empty and the name's next use is a
 * new cluster.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { nodeObjectName } from "../durable-objects/node-rpc";
import { deleteCluster } from "../workers/cluster-delete";
import { envHolding } from "./delete-helpers";
import { call, exec, freshCluster, status, waitUntil } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the member's storage says of a cluster and a term (an emptied member: nothing). */
async function leftOf(c: string, member: string) {
  const ns = env.NODE as unknown as DurableObjectNamespace;
  const stub = ns.get(ns.idFromName(nodeObjectName(c, member)));
  // (m:role is not looked at: the constructor runInDurableObject runs writes it.)
  return runInDurableObject(stub, (_, state) => ({
    cluster: state.storage.kv.get<string>("m:cluster") ?? null,
    termStart: state.storage.kv.get<string>("m:term_start") ?? null,
  }));
}

describe("a write during a DELETE of a handed-over cluster", () => {
  it("fails, leaves nothing behind, and the name's next use is a new cluster", async () => {
    const c = freshCluster("att19-deltake");
    // Started (status starts the master), then handed over before any write.
    await waitUntil("the master to start", async () => (await status(c)).status === 200);
    const promoted = await call<{ master: string; term: number }>(
      "POST",
      `/admin/clusters/${c}/promote`,
      { body: { replica: "replica-1" } },
    );
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
    const made = await exec(c, [
      { sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" },
      { sql: "INSERT INTO t (v) VALUES ('old')" },
    ]);
    expect(made.status, JSON.stringify(made.body)).toBe(200);

    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let reached = () => {};
    const othersStarted = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const deletion = deleteCluster(envHolding(`${c}:replica-4`, "destroy", gate, reached), c).then(
      () => "deleted",
      (error: unknown) => `failed: ${String(error)}`,
    );
    // The master (replica-1) is empty now; the others are being emptied.
    await othersStarted;
    await sleep(50);
    const during = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('during')" }]);
    open();
    expect(await deletion).toBe("deleted");
    // A request during the deletion fails.
    expect(during.status, JSON.stringify(during.body)).not.toBe(200);

    // Nothing is left behind: replica-1 was emptied, and holds no master's state.
    const leftover = await leftOf(c, "replica-1");

    // The name's next use: a new, empty cluster that takes writes.
    let again = await exec(c, [{ sql: "CREATE TABLE fresh (a)" }]);
    for (let i = 0; i < 12 && again.status !== 200; i++) {
      await sleep(250);
      again = await exec(c, [{ sql: "CREATE TABLE fresh (a)" }]);
    }
    let second = await exec(c, [{ sql: "INSERT INTO fresh VALUES (1)" }]);
    for (let i = 0; i < 8 && second.status !== 200; i++) {
      await sleep(250);
      second = await exec(c, [{ sql: "INSERT INTO fresh VALUES (1)" }]);
    }
    const s = await status(c);
    const term = (s.body.master as unknown as { term?: number } | undefined)?.term;
    expect(
      { leftover, first: again.status, second: second.status, term },
      JSON.stringify({ again: again.body, second: second.body }),
    ).toEqual({
      leftover: { cluster: null, termStart: null },
      first: 200,
      second: 200,
      // The handover made term 2; the new cluster's term follows it.
      term: 3,
    });
  });
});
