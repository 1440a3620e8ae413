/**
 * analyzeProgram on programs as SQLite lists them (addr, opcode, p1, p2, p3,
 * p4, p5, comment), cut to the instructions that matter.
 */
import { describe, expect, it } from "vitest";
import { analyzeProgram } from "../core/sql-program";

const op = (addr: number, opcode: string, p1 = 0, p2 = 0, p3 = 0, p4: unknown = null, p5 = 0) =>
  [addr, opcode, p1, p2, p3, p4, p5, null] as const;

describe("analyzeProgram: databases other than main", () => {
  it("lets ALTER TABLE read and rewrite temp's (empty) schema table", () => {
    const facts = analyzeProgram([
      op(0, "Init", 0, 5),
      op(1, "OpenWrite", 0, 1, 0),
      op(2, "OpenRead", 1, 1, 1),
      op(3, "OpenWrite", 2, 1, 1),
      op(4, "ParseSchema", 1),
      op(5, "Transaction", 0, 1),
      op(6, "Transaction", 1, 1),
    ]);
    expect(facts.otherDatabase).toBe(false);
    expect(facts.changesSchema).toBe(true);
  });

  it.each([
    ["another b-tree of temp", [op(0, "OpenRead", 0, 7, 1)]],
    ["an attached database", [op(0, "Transaction", 2, 0)]],
    ["an attached schema table", [op(0, "OpenRead", 0, 1, 2)]],
    ["a b-tree made in temp", [op(0, "CreateBtree", 1, 3, 1)]],
  ])("refuses %s", (_, rows) => {
    expect(analyzeProgram(rows).otherDatabase).toBe(true);
  });
});

describe("analyzeProgram: virtual tables and last_insert_rowid()", () => {
  it("names each virtual table read by the instance the program opens", () => {
    const facts = analyzeProgram([
      op(0, "Init", 0, 3),
      op(1, "VOpen", 0, 0, 0, "vtab:AAA"),
      op(2, "VOpen", 1, 0, 0, "vtab:BBB"),
      op(3, "VUpdate", 1, 5, 1, "vtab:CCC", 2),
    ]);
    expect([...facts.virtualTablesRead].sort()).toEqual(["vtab:AAA", "vtab:BBB"]);
    expect(facts.writesVirtualTable).toBe(true);
    expect(facts.setsLastRowId).toBe(true);
  });

  it("a delete from a virtual table (VUpdate p1 = 0) leaves last_insert_rowid() as it was", () => {
    const facts = analyzeProgram([op(0, "Init"), op(1, "VUpdate", 0, 1, 5, "vtab:CCC", 2)]);
    expect(facts.setsLastRowId).toBe(false);
  });

  it("an Insert sets it only with OPFLAG_LASTROWID, and only in the main program", () => {
    expect(analyzeProgram([op(0, "Init"), op(1, "Insert", 0, 1, 2, "t", 0x21)]).setsLastRowId).toBe(
      true,
    );
    expect(analyzeProgram([op(0, "Init"), op(1, "Insert", 0, 1, 2, "t", 0x01)]).setsLastRowId).toBe(
      false,
    );
    const inTrigger = analyzeProgram([
      op(0, "Init"),
      op(1, "Program"),
      op(0, "Init"),
      op(1, "Insert", 0, 1, 2, "t", 0x21),
    ]);
    expect(inTrigger.setsLastRowId).toBe(false);
  });
});
