/**
 * Promise attacked: every schema SQLite accepts replicates and rebuilds from
 * snapshots with exact values, or is refused at CREATE; verify never says
 * agree when nodes differ.
 *
 * What breaks: an ordinary user table named like a shadow table an fts5 table
 * does not make (x_docsize, then `fts5(b, columnsize=0)` named x) is accepted
 * with its rows. Once x exists SQLite lists x_docsize as a "shadow" table
 * (pragma_table_list), and the schema layer takes it for the module's own:
 * verify no longer hashes it, and a snapshot does not copy it, so a replica
 * built from a snapshot lacks the user's row while verify says agree.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { nodeObjectName } from "../durable-objects/node-rpc";
import { addReplicaRetrying, exec, freshCluster, status, verify, waitUntil } from "./helpers";

async function rowsOn(c: string, member: string): Promise<unknown> {
  const stub = env.NODE.get(env.NODE.idFromName(nodeObjectName(c, member)));
  return runInDurableObject(stub, (_, state) => {
    try {
      return state.storage.sql.exec("SELECT id, v FROM x_docsize ORDER BY id").toArray();
    } catch (error) {
      return String(error);
    }
  });
}

describe("attack 12e: a user table named like an fts5 shadow", () => {
  it("x_docsize beside fts5 x (columnsize=0) is refused, and the user's table replicates and rebuilds", async () => {
    const c = freshCluster("a12e-shadow");
    const made = await exec(c, [
      { sql: "CREATE TABLE x_docsize (id INTEGER PRIMARY KEY, v TEXT)" },
      { sql: "INSERT INTO x_docsize (v) VALUES ('user data')" },
    ]);
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    // Refused at CREATE, naming the table it would claim; the user's table stays as it was.
    const fts = await exec(c, [{ sql: "CREATE VIRTUAL TABLE x USING fts5(b, columnsize=0)" }]);
    expect(fts.status, JSON.stringify(fts.body)).toBe(400);
    expect(fts.body.error).toMatchObject({ code: "INVALID_SQL", name: "x_docsize" });
    // The same in one request with the table's creation, and with content= (no x_content made).
    const together = await exec(c, [
      { sql: "CREATE TABLE y_content (id INTEGER PRIMARY KEY, v TEXT)" },
      { sql: "CREATE VIRTUAL TABLE y USING fts5(b, content='')" },
    ]);
    expect(together.status, JSON.stringify(together.body)).toBe(400);
    // An fts5 table that claims nothing is still accepted.
    const other = await exec(c, [{ sql: "CREATE VIRTUAL TABLE z USING fts5(b, columnsize=0)" }]);
    expect(other.status, JSON.stringify(other.body)).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO x_docsize (v) VALUES ('more')" }])).status).toBe(
      200,
    );
    const added = await addReplicaRetrying(c);
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    const id = added.body.id;
    await waitUntil(`${id} coherent`, async () => {
      const s = await status(c);
      return s.body.replicas.some(
        (r) => r.id === id && r.state === "coherent" && r.ackedLsn === s.body.master.lsn,
      );
    });
    const master = await rowsOn(c, "node-0");
    const rebuilt = await rowsOn(c, id);
    const v = await verify(c);
    expect(master).toEqual([
      { id: 1, v: "user data" },
      { id: 2, v: "more" },
    ]);
    expect(
      { rebuilt, agree: v.body.agree },
      `verify: ${JSON.stringify(v.body).slice(0, 400)}`,
    ).toEqual({ rebuilt: master, agree: true });
  }, 60_000);
});
