/**
 * SQLite drops no table while any statement on the node is still open
 * (SQLITE_LOCKED): every cursor a node opens must be read to its end, even one
 * whose rows stopped counting (a result over its limit, a snapshot chunk full
 * of bytes). A user's DROP TABLE after either must be committed.
 */
import { describe, expect, it } from "vitest";
import { exec, freshCluster, query } from "./helpers";

describe("no statement is left open on a node", () => {
  it("a master's read refused for its size leaves DROP TABLE possible", async () => {
    const c = freshCluster("cursor-read");
    const made = await exec(c, [
      { sql: "CREATE TABLE big (id INTEGER PRIMARY KEY, v TEXT)" },
      { sql: "CREATE TABLE doomed (id INTEGER PRIMARY KEY)" },
      {
        sql: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 12000) INSERT INTO big (v) SELECT 'x' FROM n",
      },
    ]);
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    // More rows than a result may hold: refused after 10 000 of them.
    const read = await query(c, "SELECT id, v FROM big", { replica: "master" });
    expect(read.status, JSON.stringify(read.body).slice(0, 300)).toBe(413);
    const dropped = await exec(c, [{ sql: "DROP TABLE doomed" }]);
    expect(dropped.status, JSON.stringify(dropped.body)).toBe(200);
  }, 60_000);
});
