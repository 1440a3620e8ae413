/**
 * The statements a replica applies captured rows with stay inside the
 * platform's limits (100 parameters, 100 columns in a result set or a set
 * list, 100 KB of statement text) whatever the table's width, and put no value
 * into the statement text. workerd runs them in wide-rows.test.ts.
 */
import { describe, expect, it } from "vitest";
import { applyChanges, rowsTooWideToMove } from "../core/row-apply";
import type { Change } from "../core/row-capture";
import type { TableInfo } from "../core/schema-info";

const SEP = "\u001f";

function rowidTable(width: number): TableInfo {
  return {
    name: "w",
    kind: "table",
    withoutRowid: false,
    strict: false,
    columns: Array.from({ length: width }, (_, i) => `c${i}`),
    key: { kind: "rowid", expr: "rowid", aliasColumn: null },
  };
}

/** An image of `width` data columns after rowid `id`, every cell a long text. */
function image(id: number, width: number): string {
  return [`i${id}`, ...Array.from({ length: width }, (_, i) => `s${"x".repeat(40)}${i}`)].join(SEP);
}

function paramCount(sql: string): number {
  const numbered = [...sql.matchAll(/\?(\d+)/g)].map((m) => Number(m[1]));
  return numbered.length === 0 ? 0 : Math.max(...numbered);
}

/** Top-level parenthesised groups after VALUES: the rows of a multi-row INSERT. */
function valuesRows(sql: string): number {
  const values = sql.slice(sql.indexOf(" VALUES ") + 8);
  let depth = 0;
  let rows = 0;
  for (const ch of values) {
    if (ch === "(" && depth++ === 0) rows++;
    if (ch === ")") depth--;
  }
  return rows;
}

function setListLength(sql: string): number {
  const set = sql.match(/ SET (.*) WHERE /)?.[1] ?? "";
  return set === "" ? 0 : set.split(/, (?=[^,]+ = )/).length;
}

describe("applyChanges within the platform's limits", () => {
  it("a row of 101 cells is too wide to move; 100 cells are not", () => {
    expect(rowsTooWideToMove(rowidTable(100))).toBe(true);
    expect(rowsTooWideToMove(rowidTable(99))).toBe(false);
  });

  for (const width of [3, 99, 100]) {
    it(`a ${width}-column rowid table: inserts, updates and a moved row`, () => {
      const table = rowidTable(width);
      const changes: Change[] = [];
      for (let id = 1; id <= 250; id++) {
        changes.push({ t: "w", op: "I", nk: `i${id}`, img: image(id, width) });
      }
      changes.push({ t: "w", op: "U", ok: "i1", nk: "i1", img: image(1, width) });
      changes.push({ t: "w", op: "U", ok: "i2", nk: "i900", img: image(900, width) });
      changes.push({ t: "w", op: "D", ok: "i3" });
      const statements = applyChanges(table, changes);
      let inserted = 0;
      for (const statement of statements) {
        expect(statement.params.length).toBeLessThanOrEqual(100);
        expect(paramCount(statement.sql)).toBe(statement.params.length);
        expect(statement.sql.length).toBeLessThan(100_000);
        expect(statement.sql).not.toContain("xxxx");
        const moved = /SET rowid = /.test(statement.sql);
        if (!moved) expect(setListLength(statement.sql)).toBeLessThanOrEqual(100);
        if (statement.sql.startsWith("INSERT")) {
          const rows = valuesRows(statement.sql);
          // A multi-row VALUES is a result set: at most 100 columns.
          if (width + 1 > 100) expect(rows).toBe(1);
          inserted += rows;
        }
      }
      expect(inserted).toBe(250);
      const updates = statements.filter((s) => s.sql.startsWith("UPDATE"));
      // The unchanged key is not set again; the moved row sets its rowid.
      expect(updates[0]?.sql).not.toMatch(/SET rowid = /);
      expect(updates.some((s) => /SET rowid = /.test(s.sql))).toBe(true);
      expect(updates.every((s) => s.mustHit === true)).toBe(true);
      // A moved row of a 100-column rowid table is refused on the master
      // (rowsTooWideToMove): here it is one UPDATE of 101 columns, never two.
      expect(updates.length).toBe(2);
    });
  }
});
