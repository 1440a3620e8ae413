/**
 * A query's column names are SQLite's for the statement as sent, asked of the
 * statement itself limited to no row (durable-objects/sqlite/names.ts): WITH
 * ... VALUES, a compound ending in VALUES, the statement's own LIMIT, and a
 * recursive CTE (which the names step must never run).
 */
import { expect, it } from "vitest";
import { call, freshCluster } from "./helpers";
it("are SQLite's for WITH ... VALUES, a recursive CTE, LIMIT and compounds", async () => {
  const c = freshCluster("zz-names");
  for (const [sql, cols] of [
    ["WITH x(a) AS (SELECT 1) VALUES (2, 3)", ["column1", "column2"]],
    [
      "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s LIMIT 3) SELECT x, x FROM s",
      ["x", "x"],
    ],
    ["SELECT 1 AS a LIMIT 5 OFFSET 0", ["a"]],
    ["SELECT 2 AS b UNION VALUES (3)", ["b"]],
  ] as const) {
    const r = await call<{ columns: string[] }>("POST", `/v1/clusters/${c}/query`, {
      body: { sql, format: "arrays", replica: "master" },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.columns, sql).toEqual(cols);
  }
});
