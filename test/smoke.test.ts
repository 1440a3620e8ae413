import { describe, expect, it } from "vitest";
import { exec, freshCluster, query, status } from "./helpers";

describe("cluster smoke (4 replicas)", () => {
  it("a write is answered and readable", async () => {
    const c = freshCluster("smoke");
    const ddl = await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }]);
    expect(ddl.status, JSON.stringify(ddl.body)).toBe(200);
    const w = await exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: ["x"] }]);
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    const r = await query(c, "SELECT v FROM t");
    expect(r.body.rows).toEqual([{ v: "x" }]);
    const s = await status(c);
    console.log(JSON.stringify(s.body));
  });
});
