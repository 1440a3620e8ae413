/**
 * Promise attacked: no statement is left open on a node, so a user's DROP
 * TABLE is never refused SQLITE_LOCKED (cursor-finished.test.ts). Here a
 * CREATE TABLE ... AS SELECT whose rows are over log_record_max_bytes: the
 * master reads the new table's rows for the record (write.ts tableRows) and
 * the record budget throws in the middle of that cursor, which stays open.
 * The next DROP TABLE on the master must still be committed.
 */
import { describe, expect, it } from "vitest";
import { exec, freshCluster, patchTunables } from "./helpers";

describe("attack 12g: a statement left open by a refused CREATE TABLE AS", () => {
  it("DROP TABLE after a CTAS over the record limit is committed", async () => {
    const c = freshCluster("a12g-ctas");
    const made = await exec(c, [
      { sql: "CREATE TABLE doomed (id INTEGER PRIMARY KEY)" },
      { sql: "CREATE TABLE doomed2 (id INTEGER PRIMARY KEY)" },
    ]);
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const tuned = await patchTunables(c, { log_record_max_bytes: 65_536 });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    const ctas = await exec(c, [
      {
        sql: "CREATE TABLE big AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400) SELECT i, printf('%.*c', 1000, 'x') AS v FROM n",
      },
    ]);
    expect(ctas.status, JSON.stringify(ctas.body).slice(0, 300)).toBe(413);
    const dropped = await exec(c, [{ sql: "DROP TABLE doomed" }]);
    expect(dropped.status, JSON.stringify(dropped.body)).toBe(200);
    const dropped2 = await exec(c, [{ sql: "DROP TABLE doomed2" }]);
    expect(dropped2.status, JSON.stringify(dropped2.body)).toBe(200);
  }, 60_000);
});
