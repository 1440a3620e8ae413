import { describe, expect, it } from "vitest";
import {
  bodyBytes,
  decodeRecord,
  decodeStatements,
  encodeStatements,
  isConsecutive,
} from "../core/log-codec";
import type { LogRecord, Statement } from "../core/protocol";

function record(lsn: number): LogRecord {
  return { lsn, term: 1, ts: 1000 + lsn, statements: [] };
}

describe("encodeStatements and decodeStatements", () => {
  it("round-trip statements with every kind of SQL value", () => {
    const statements: Statement[] = [
      { sql: "INSERT INTO t (a, b, c) VALUES (?, ?, ?)", params: [1, "two", null] },
      { sql: "UPDATE t SET a = ?", params: [-3.25] },
      { sql: "DELETE FROM t", params: [] },
      { sql: "INSERT INTO u VALUES (?)", params: ['quote " and \\ and \u00e9 and \u{1f600}'] },
    ];
    const body = encodeStatements(statements);
    expect(typeof body).toBe("string");
    expect(decodeStatements(body)).toEqual(statements);
  });

  it("round-trip an empty transaction", () => {
    expect(decodeStatements(encodeStatements([]))).toEqual([]);
  });

  it("encode deterministically", () => {
    const statements: Statement[] = [{ sql: "SELECT ?", params: [1] }];
    expect(encodeStatements(statements)).toBe(encodeStatements([{ sql: "SELECT ?", params: [1] }]));
  });

  it("reject a body that is not JSON", () => {
    expect(() => decodeStatements("not json")).toThrow();
  });

  it("reject a body that is not an array", () => {
    expect(() => decodeStatements('{"sql":"x"}')).toThrow("not an array");
    expect(() => decodeStatements("null")).toThrow("not an array");
  });

  it("reject entries of the wrong shape, naming the entry", () => {
    const malformed = [
      '[["SELECT 1"]]',
      '[["SELECT 1", [], 3]]',
      '["SELECT 1"]',
      "[[1, []]]",
      '[["SELECT 1", {}]]',
      '[["SELECT 1", "x"]]',
    ];
    for (const body of malformed) {
      expect(() => decodeStatements(body), body).toThrow("log entry 0 is malformed");
    }
    expect(() => decodeStatements('[["SELECT 1", []], ["SELECT 2"]]')).toThrow(
      "log entry 1 is malformed",
    );
  });

  it("reject params that are not SQL values", () => {
    for (const param of ["true", "[1]", '{"a":1}']) {
      const body = `[["SELECT ?", [${param}]]]`;
      expect(() => decodeStatements(body), body).toThrow("log entry 0 is malformed");
    }
  });
});

describe("decodeRecord", () => {
  it("keeps the row's LSN, term and timestamp and decodes its body", () => {
    const statements: Statement[] = [{ sql: "INSERT INTO t VALUES (?)", params: [7] }];
    expect(
      decodeRecord({ lsn: 12, term: 3, ts: 1_700_000_000_000, body: encodeStatements(statements) }),
    ).toEqual({ lsn: 12, term: 3, ts: 1_700_000_000_000, statements });
  });

  it("throws for a malformed body", () => {
    expect(() => decodeRecord({ lsn: 1, term: 1, ts: 0, body: "[1]" })).toThrow();
  });
});

describe("bodyBytes", () => {
  it("counts UTF-8 bytes, not UTF-16 code units", () => {
    expect(bodyBytes("")).toBe(0);
    expect(bodyBytes("abc")).toBe(3);
    expect(bodyBytes("\u00e9")).toBe(2);
    expect(bodyBytes("\u20ac")).toBe(3);
    expect(bodyBytes("\u{1f600}")).toBe(4);
    expect("\u{1f600}".length).toBe(2);
  });

  it("matches the encoded length of a real body", () => {
    const body = encodeStatements([{ sql: "INSERT INTO t VALUES (?)", params: ["na\u00efve"] }]);
    expect(bodyBytes(body)).toBe(body.length + 1);
  });
});

describe("isConsecutive", () => {
  it("accepts an empty batch and a single record", () => {
    expect(isConsecutive([])).toBe(true);
    expect(isConsecutive([record(5)])).toBe(true);
  });

  it("accepts records whose LSNs increase by one", () => {
    expect(isConsecutive([record(5), record(6), record(7)])).toBe(true);
  });

  it("rejects a gap, a repeat or a decrease", () => {
    expect(isConsecutive([record(5), record(7)])).toBe(false);
    expect(isConsecutive([record(5), record(5)])).toBe(false);
    expect(isConsecutive([record(6), record(5)])).toBe(false);
    expect(isConsecutive([record(1), record(2), record(3), record(5)])).toBe(false);
  });
});
