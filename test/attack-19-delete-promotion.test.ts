/**
 * Attack: DELETE /admin/clusters/{c} against a promotion.
 *
 * Promise: while a deletion runs the directory says `deleting` and no master
 * starts; once it is done the name's next use is a new, empty cluster, whose
 * first term follows every term the deleted one used.
 *
 * 1. A deletion cut short after its first step (the directory marked, the
 *    master emptied: what a front door that died mid-DELETE leaves, which the
 *    code says "answers nothing until DELETE is repeated"), then a plain
 *    POST …/promote: the master does not answer, so the route promotes
 *    without it, and nothing in that path looks at `deleting`.
 * 2. A promotion without the master whose fence straddles the DELETE: one
 *    member answers the fence late (within the 2 s the fence waits), the
 *    DELETE runs in between, and the promotion's compare-and-set then lands
 *    on the fresh directory record (term 1 again).
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { DirectoryRecord } from "../core/directory-record";
import type { ClusterDirectory } from "../durable-objects/directory";
import { promoteWithoutMaster } from "../durable-objects/failover";
import { memberStub } from "../workers/cluster";
import { deleteByName, envHolding, writeEventually } from "./delete-helpers";
import { call, exec, freshCluster, status, waitUntil } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function directory(c: string) {
  const ns = env.DIRECTORY as unknown as DurableObjectNamespace<ClusterDirectory>;
  return ns.get(ns.idFromName(c));
}

/** A cluster with a table, a row on every replica. */
async function populated(prefix: string) {
  const c = freshCluster(prefix);
  const made = await exec(c, [
    { sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" },
    { sql: "INSERT INTO t (v) VALUES ('old')" },
  ]);
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  await waitUntil("every replica to ack", async () => {
    const s = await status(c);
    return s.body.replicas.every((r) => r.ackedLsn === s.body.master.lsn);
  });
  return c;
}

describe("a promotion during a deletion", () => {
  it("is refused, the directory keeps saying deleting, and no master takes writes", async () => {
    const c = await populated("att19-delprom");
    // The deletion's first steps, then it is cut short (the front door died).
    const marked = await directory(c).markDeleting();
    await memberStub(env, c, "node-0").destroy(marked.term);
    await sleep(100);

    const promoted = await call("POST", `/admin/clusters/${c}/promote`, { body: {} });
    const record = (await directory(c).read()) as DirectoryRecord;
    const write = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('during')" }]);

    // Finish the deletion whatever happened, so the name is left clean.
    const finished = await deleteByName(c);
    expect(finished.status, JSON.stringify(finished.body)).toBe(200);

    expect(
      { promoted: promoted.status, deleting: record.deleting === true, write: write.status },
      JSON.stringify({ promoted: promoted.body, record: { ...record, config: undefined } }),
    ).toEqual({ promoted: 503, deleting: true, write: 503 });
  });
});

describe("a promotion whose fence straddles a DELETE", () => {
  it("is refused, and the name's next use is a new cluster whose term follows the deleted one's", async () => {
    const c = await populated("att19-delfence");
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const promotion = promoteWithoutMaster(
      envHolding(`${c}:replica-4`, "prepareTerm", gate),
      c,
      undefined,
    )
      .then((r) => ({ ok: r.ok, detail: r.ok ? r.value : r.error.message }))
      .catch((error: unknown) => ({ ok: false, detail: String(error) }));
    // The other members answered the fence; replica-4's answer is on its way.
    await sleep(300);
    const deleted = await deleteByName(c);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    // replica-4 answers now, well within the fence's 2 s.
    open();
    const outcome = await promotion;

    const again = await writeEventually(c, "CREATE TABLE fresh (a)");
    const s = await status(c);
    const term = (s.body.master as unknown as { term?: number } | undefined)?.term;
    const record = (await directory(c).read()) as DirectoryRecord;
    // Terms of a name are never reused (the deleted cluster was in term 1), so the
    // promotion's compare-and-set on term 1 cannot land on the new cluster.
    expect(
      { promoted: outcome.ok, write: again.status, term, directoryTerm: record.term },
      JSON.stringify({ outcome, write: again.body, record: { ...record, config: undefined } }),
    ).toEqual({ promoted: false, write: 200, term: 2, directoryTerm: 2 });
  });
});
