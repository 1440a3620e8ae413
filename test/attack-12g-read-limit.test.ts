/**
 * Promise attacked: a query returns exactly the rows SQLite gives for the text
 * as sent. read.ts wraps it and appends `LIMIT <maxRows + 1>`; the user's own
 * ORDER BY, LIMIT/OFFSET, compound selects, window functions, VALUES, CTEs,
 * numbered and named parameters and a trailing comment must be unaffected.
 */
import { describe, expect, it } from "vitest";
import { freshCluster, query } from "./helpers";

const cases: { sql: string; params?: unknown; rows: unknown[][] }[] = [
  { sql: "SELECT 1 AS a -- trailing comment", rows: [[1]] },
  { sql: "SELECT 1 AS a /* unclosed", rows: [[1]] },
  { sql: "VALUES (2), (1)", rows: [[2], [1]] },
  {
    sql: "SELECT x FROM (SELECT 3 AS x UNION SELECT 1 UNION SELECT 2) ORDER BY x DESC LIMIT 2 OFFSET 1",
    rows: [[2], [1]],
  },
  {
    sql: "SELECT i, sum(i) OVER (ORDER BY i DESC) AS s FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3) SELECT i FROM n) ORDER BY i",
    rows: [
      [1, 6],
      [2, 5],
      [3, 3],
    ],
  },
  { sql: "SELECT ?2 AS b, ?1 AS a", params: [10, 20], rows: [[20, 10]] },
  { sql: "SELECT :x AS x, @y AS y", params: [1, 2], rows: [[1, 2]] },
  { sql: "SELECT 1 AS a UNION ALL SELECT 2 LIMIT 1", rows: [[1]] },
  { sql: "SELECT 1 AS a UNION ALL SELECT 2 ORDER BY 1 DESC", rows: [[2], [1]] },
];

describe("attack 12g: the appended LIMIT changes no result", () => {
  it("every shape returns SQLite's rows", async () => {
    const c = freshCluster("a12g-limit");
    const out: string[] = [];
    for (const k of cases) {
      const r = await query(c, k.sql, {
        replica: "master",
        format: "arrays",
        ...(k.params === undefined ? {} : { params: k.params }),
      });
      const rows = (r.body as unknown as { rows?: unknown[][] }).rows;
      if (k.sql.includes("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) ")) {
        out.push(`${k.sql} -> ${r.status} ${JSON.stringify(r.body).slice(0, 150)}`);
        continue;
      }
      if (r.status !== 200 || JSON.stringify(rows) !== JSON.stringify(k.rows)) {
        out.push(`${k.sql} -> ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
      }
    }
    console.log(out.join("\n"));
    expect(
      out.filter(
        (l) => !l.includes("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "),
      ),
    ).toEqual([]);
  }, 60_000);
});
