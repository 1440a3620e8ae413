import { describe, expect, it } from "vitest";
import { exec, freshCluster, query } from "./helpers";

describe("query results as arrays, 4 replicas", () => {
  it("keeps duplicate and numeric column names in select order", async () => {
    const c = freshCluster("format");
    expect((await exec(c, [{ sql: "CREATE TABLE t (a, b)" }])).status).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO t VALUES (1, 'x')" }])).status).toBe(200);
    for (const replica of ["master", "replica-1"]) {
      const res = await query(c, 'SELECT a, a, b AS "38", b AS "2" FROM t', {
        format: "arrays",
        replica,
        consistency: "any",
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ columns: ["a", "a", "38", "2"], rows: [[1, 1, "x", "x"]] });
    }
    // Objects stay the default, and lose what arrays keep.
    const objects = await query(c, 'SELECT a, a, b AS "38" FROM t', { replica: "master" });
    expect(objects.body.rows).toEqual([{ a: 1, "38": "x" }]);
  });
});
