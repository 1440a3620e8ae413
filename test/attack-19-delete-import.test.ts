/**
 * Attack: DELETE of a cluster in the middle of an import.
 *
 * POST …/import streams the dump and commits it batch by batch, each batch
 * through `onMaster` under its own key; only the first batch checks that the
 * cluster is empty. A DELETE between two batches empties every member and
 * frees the name; the next batch then creates a new cluster and commits into
 * it, and the import answers 200 with the statements of the batches the
 * DELETE took counted as loaded.
 *
 * Promise 3: after the DELETE the name's next use is a new, empty cluster;
 * nothing of the deleted cluster (here: its import in flight) reaches it, and
 * an import never answers "loaded" for rows that are not there.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ADMIN, call, freshCluster, query, status, waitUntil } from "./helpers";

const encoder = new TextEncoder();

describe("an import across a DELETE", () => {
  it("does not load its tail into the new cluster, nor answer loaded", async () => {
    const c = freshCluster("att19-delimp");
    // Started, empty.
    await waitUntil("the master to start", async () => (await status(c)).status === 200);
    let push = (_: string) => {};
    let close = () => {};
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        push = (text) => controller.enqueue(encoder.encode(text));
        close = () => controller.close();
      },
    });
    const answer = exports.default
      .fetch(
        new Request(`http://cluster.test/admin/clusters/${c}/import`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${ADMIN}`,
            "content-type": "application/sql; charset=utf-8",
          },
          body,
          // A streamed request body says so.
          duplex: "half",
        } as RequestInit & { duplex: string }),
      )
      .then(async (r) => ({ status: r.status, body: await r.text() }));

    // The first batch: CREATE TABLE a and 51 inserts of 99 rows (5049 >= BATCH_ROWS),
    // closed by the next statement (c0, which goes with the next batch, as does c1).
    let head = "CREATE TABLE a (x);\n";
    for (let i = 0; i < 51 * 99; i++) head += `INSERT INTO a VALUES(${i});\n`;
    head += "CREATE TABLE c0 (z);\nCREATE TABLE c1 (z);\n";
    push(head);
    await waitUntil(
      "the first batch to commit",
      async () => (await status(c)).body.master.lsn >= 1,
      20_000,
    );

    const deleted = await call("DELETE", `/admin/clusters/${c}?confirm=${c}`);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);

    // The rest of the dump.
    push("CREATE TABLE b (y);\nINSERT INTO b VALUES (1);\n");
    close();
    const imported = await answer;

    const leaked = await query(c, "SELECT count(*) AS n FROM b", { consistency: "strong" });
    expect(
      { importAnsweredLoaded: imported.status === 200, bInNewCluster: leaked.status === 200 },
      JSON.stringify({ imported, leaked: leaked.body }),
    ).toEqual({ importAnsweredLoaded: false, bInNewCluster: false });
  });
});
