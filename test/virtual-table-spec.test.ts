import { describe, expect, it } from "vitest";
import { virtualTableModule } from "../core/virtual-table-spec";

describe("virtualTableModule: the module as SQLite's grammar reads it", () => {
  it.each([
    ["CREATE VIRTUAL TABLE f USING fts5(x)", "fts5"],
    ["create virtual table f using FTS5 (x)", "fts5"],
    ["CREATE VIRTUAL TABLE IF NOT EXISTS main.f USING fts5(x)", "fts5"],
    ['CREATE VIRTUAL TABLE "x using fts5" USING rtree(id, a, b)', "rtree"],
    ["CREATE VIRTUAL TABLE [using fts5] USING fts5vocab(f, 'row')", "fts5vocab"],
    ["CREATE VIRTUAL TABLE 'f' /* USING fts5 */ USING rtree(id, a, b)", "rtree"],
    ['CREATE VIRTUAL TABLE f USING "fts5"(x)', "fts5"],
    ["CREATE VIRTUAL TABLE f -- USING rtree\n USING fts5(x)", "fts5"],
  ])("%s -> %s", (sql, module) => {
    expect(virtualTableModule(sql)).toBe(module);
  });

  it.each([
    ["CREATE TABLE f (x)"],
    ["CREATE VIRTUAL TABLE f"],
    ["CREATE VIRTUAL TABLE f fts5(x)"],
    ["CREATE VIRTUAL TABLE a.b.c USING fts5(x)"],
    ["CREATE VIRTUAL TABLE f USING 'unterminated"],
  ])("not a virtual table statement it can read: %s", (sql) => {
    expect(virtualTableModule(sql)).toBeNull();
  });
});
