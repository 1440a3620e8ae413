import { describe, expect, it } from "vitest";
import { bodyBytes, decodeBody, encodeBody, isConsecutive, toRecord } from "../core/log-codec";
import type { LogEntry } from "../core/protocol";

const entries: LogEntry[] = [
  {
    kind: "rows",
    changes: [
      {
        t: "t",
        op: "I",
        nk: "i1",
        img: "i1\u001fi9223372036854775807\u001fr-0.0\u001ftFF00\u001fb00",
      },
      { t: "t", op: "U", ok: "i1", nk: "i2", img: "i2\u001fn" },
      { t: "t", op: "D", ok: "i2" },
    ],
    effects: "0123456789abcdef0123456789abcdef",
  },
  // Rows no foreign key joins go without a digest (protocol.ts).
  { kind: "rows", changes: [{ t: "u", op: "I", nk: "i1", img: "i1\u001fn" }] },
  { kind: "ddl", sql: "CREATE TABLE u (a)", changes: [], effects: "e", tables: ["u"] },
  { kind: "ddl", sql: "CREATE INDEX i ON u (a)", changes: [], effects: "e" },
  { kind: "sql", sql: "INSERT INTO f (body) VALUES (?1)", params: ["shello", "n"], effects: "e" },
];

describe("log record codec", () => {
  it("round-trips every entry kind with exact cells and the sqlite_sequence image", () => {
    const sequence = [{ name: "t", seq: "i9223372036854775807" }];
    const text = encodeBody({ entries, sequence });
    expect(decodeBody(text)).toEqual({ entries, sequence });
    expect(toRecord({ lsn: 7, term: 2, ts: 5, end: 90 }, decodeBody(text))).toEqual({
      lsn: 7,
      term: 2,
      ts: 5,
      end: 90,
      entries,
      sequence,
    });
  });

  it("leaves sequence out when the commit did not write it", () => {
    expect(decodeBody(encodeBody({ entries: [] }))).toEqual({ entries: [] });
  });

  it("counts bytes in UTF-8", () => {
    expect(bodyBytes("é")).toBe(2);
    expect(bodyBytes("abc")).toBe(3);
  });

  it.each([
    ["not an object", "1"],
    ["no entries", "{}"],
    ["an entry of an unknown kind", '{"entries":[{"kind":"statement","effects":"e"}]}'],
    ["a ddl entry without effects", '{"entries":[{"kind":"ddl","sql":"x","changes":[]}]}'],
    ["a sql entry without effects", '{"entries":[{"kind":"sql","sql":"x","params":[]}]}'],
    [
      "a rows entry whose effects are not text",
      '{"entries":[{"kind":"rows","changes":[],"effects":1}]}',
    ],
    [
      "a change with an unknown op",
      '{"entries":[{"kind":"rows","changes":[{"t":"t","op":"X"}],"effects":"e"}]}',
    ],
    [
      "a change image that is not text",
      '{"entries":[{"kind":"rows","changes":[{"t":"t","op":"I","img":5}],"effects":"e"}]}',
    ],
    ["a ddl entry without sql", '{"entries":[{"kind":"ddl","changes":[],"effects":"e"}]}'],
    [
      "a ddl entry whose tables are not names",
      '{"entries":[{"kind":"ddl","sql":"x","changes":[],"effects":"e","tables":[1]}]}',
    ],
    [
      "a sql entry with a numeric parameter",
      '{"entries":[{"kind":"sql","sql":"x","params":[1],"effects":"e"}]}',
    ],
    ["a sequence row without seq", '{"entries":[],"sequence":[{"name":"t"}]}'],
  ])("refuses a body with %s", (_, text) => {
    expect(() => decodeBody(text)).toThrow(/malformed/);
  });

  it("tells consecutive runs of records from gapped ones", () => {
    const r = (lsn: number) => ({ lsn, term: 1, ts: 0, end: 0, entries: [] });
    expect(isConsecutive([r(1), r(2), r(3)])).toBe(true);
    expect(isConsecutive([r(1), r(3)])).toBe(false);
    expect(isConsecutive([])).toBe(true);
  });
});
