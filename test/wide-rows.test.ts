/**
 * Rows wider than SQLite's 100 parameters per statement on Durable Objects:
 * a replica applies them (and a new replica installs them from a snapshot)
 * with every value exact: inserts, updates and deletes of a 100-column table
 * (the most Durable Objects allow; 101 cells a row with its rowid), and of a
 * WITHOUT ROWID table whose 60-column key makes an UPDATE bind 121 values. A
 * multi-row INSERT of such rows stays under the platform's 100 KB statement
 * text, and capture's row image of 101 cells under SQLite's expression depth.
 */
import { describe, expect, it } from "vitest";
import { ok } from "./review-helpers";
import { freshCluster } from "./helpers";
import { NODES, addReplica, sameEverywhere } from "./node-images";

const WIDE = 100;
const names = Array.from({ length: WIDE }, (_, i) => `c${i}`);

/** A value of every storage class, by column: exact ones the JS number could not carry. */
function valueSql(i: number, row: string): string {
  switch (i % 6) {
    case 0:
      return `9007199254740993 + ${row}`;
    case 1:
      return "-0.0";
    case 2:
      return `'it''s ' || ${row} || ' \u00e9\u4e2d'`;
    case 3:
      return `randomblob(0) || x'00ff' || ${row}`;
    case 4:
      return "NULL";
    default:
      return `${row} * 0.1`;
  }
}

describe("rows wider than a statement's parameters", () => {
  it("a 100-column table (the most Durable Objects allow): inserted, updated and deleted rows are exact on every node and on a new replica", async () => {
    const c = freshCluster("wide");
    // 100 columns, the most a table may have here, and its rowid: 101 cells a row.
    await ok(c, `CREATE TABLE w (${names.map((n) => `${n} ANY`).join(", ")})`);
    // 300 rows in one statement (under replicate_statement_min_rows: shipped as rows).
    const select = names.map((_, i) => valueSql(i, "x")).join(", ");
    await ok(
      c,
      `INSERT INTO w (${names.join(", ")}) WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 300) SELECT ${select} FROM n`,
    );
    await ok(c, `UPDATE w SET c0 = c0 * 2, c2 = 'updated' WHERE rowid % 7 = 0`);
    await ok(c, "DELETE FROM w WHERE rowid % 11 = 0");
    // A result set too has at most 100 columns: the image in two halves.
    const halves = [names.slice(0, 50), names.slice(50)].map(
      (half) => `SELECT rowid, ${half.map((n) => `quote(${n})`).join(", ")} FROM w ORDER BY rowid`,
    );
    for (const image of halves) expect((await sameEverywhere(c, image)).length).toBe(300 - 27);
    const added = await addReplica(c);
    for (const image of halves) await sameEverywhere(c, image, [...NODES, added]);
  }, 90_000);

  it("a WITHOUT ROWID table with a 60-column key: updates and deletes bind more than 100 values", async () => {
    const c = freshCluster("widekey");
    const key = Array.from({ length: 60 }, (_, i) => `k${i}`);
    await ok(
      c,
      `CREATE TABLE k (${key.map((n) => `${n} INTEGER`).join(", ")}, v TEXT, PRIMARY KEY (${key.join(", ")})) WITHOUT ROWID`,
    );
    for (let r = 0; r < 3; r++) {
      await ok(
        c,
        `INSERT INTO k VALUES (${key.map((_, i) => `${r * 1000 + i}`).join(", ")}, 'row ${r}')`,
      );
    }
    await ok(c, "UPDATE k SET v = 'changed', k59 = k59 + 1 WHERE k0 = 1000");
    await ok(c, "DELETE FROM k WHERE k0 = 2000");
    const image = `SELECT ${key.join(", ")}, quote(v) FROM k ORDER BY k0`;
    const rows = await sameEverywhere(c, image);
    expect(rows.length).toBe(2);
  }, 60_000);
});
