import { describe, expect, it } from "vitest";
import { canonicalRow, RowHasher } from "../core/checksum";

function digestOf(rows: readonly Record<string, unknown>[]): string {
  const hasher = new RowHasher();
  for (const row of rows) hasher.addRow(row);
  return hasher.digest();
}

function bytes(...values: number[]): ArrayBuffer {
  return new Uint8Array(values).buffer;
}

describe("RowHasher", () => {
  it("gives a 64-bit digest as 16 hex characters", () => {
    expect(digestOf([])).toMatch(/^[0-9a-f]{16}$/);
    expect(digestOf([{ id: 1, name: "a" }])).toMatch(/^[0-9a-f]{16}$/);
  });

  it("gives the same digest for the same rows in separate hashers", () => {
    const rows = [
      { id: 1, name: "alice", score: 1.5, note: null },
      { id: 2, name: "bob", score: -3, note: "x" },
    ];
    expect(digestOf(rows)).toBe(digestOf(rows.map((row) => ({ ...row }))));
  });

  it("changes the digest when a row is added", () => {
    expect(digestOf([{ id: 1 }])).not.toBe(digestOf([]));
    expect(digestOf([{ id: 1 }, { id: 1 }])).not.toBe(digestOf([{ id: 1 }]));
  });

  it("counts the rows it hashed", () => {
    const hasher = new RowHasher();
    hasher.addRow({ id: 1 });
    hasher.addRow({ id: 2 });
    expect(hasher.rows).toBe(2);
  });

  it("depends on the order of the rows", () => {
    expect(digestOf([{ id: 1 }, { id: 2 }])).not.toBe(digestOf([{ id: 2 }, { id: 1 }]));
  });

  it("depends on the order of the columns", () => {
    expect(digestOf([{ a: 1, b: 2 }])).not.toBe(digestOf([{ b: 2, a: 1 }]));
  });

  it("keeps row boundaries apart", () => {
    expect(digestOf([{ a: "x" }, { a: "y" }])).not.toBe(digestOf([{ a: "xy" }]));
  });

  it("distinguishes different values of the same type", () => {
    expect(digestOf([{ v: 1 }])).not.toBe(digestOf([{ v: 2 }]));
    expect(digestOf([{ v: 0.1 }])).not.toBe(digestOf([{ v: 0.10000000000000002 }]));
    expect(digestOf([{ v: "abc" }])).not.toBe(digestOf([{ v: "abd" }]));
    expect(digestOf([{ v: "\u{1f600}" }])).not.toBe(digestOf([{ v: "\u{1f601}" }]));
  });

  it("distinguishes the number 1 from the string '1'", () => {
    expect(canonicalRow({ v: 1 })).not.toBe(canonicalRow({ v: "1" }));
    expect(digestOf([{ v: 1 }])).not.toBe(digestOf([{ v: "1" }]));
  });

  it("distinguishes null from the empty string and from the string 'null'", () => {
    expect(digestOf([{ v: null }])).not.toBe(digestOf([{ v: "" }]));
    expect(digestOf([{ v: null }])).not.toBe(digestOf([{ v: "null" }]));
    expect(digestOf([{ v: null }])).not.toBe(digestOf([{ v: 0 }]));
  });

  it("distinguishes column names", () => {
    expect(digestOf([{ a: 1 }])).not.toBe(digestOf([{ b: 1 }]));
  });

  it("hashes an ArrayBuffer by its bytes", () => {
    expect(canonicalRow({ blob: bytes(0, 15, 255) })).toBe("4:blob=b000fff");
    expect(digestOf([{ blob: bytes(1, 2, 3) }])).toBe(digestOf([{ blob: bytes(1, 2, 3) }]));
    expect(digestOf([{ blob: bytes(1, 2, 3) }])).not.toBe(digestOf([{ blob: bytes(1, 2, 4) }]));
    expect(digestOf([{ blob: bytes() }])).not.toBe(digestOf([{ blob: "" }]));
    expect(digestOf([{ blob: bytes(0x61) }])).not.toBe(digestOf([{ blob: "a" }]));
    expect(digestOf([{ blob: bytes(1) }])).not.toBe(digestOf([{ blob: 1 }]));
  });

  it("gives different digests to different rows whose text contains the separators", () => {
    const master = { a: "x\u001fb=sy", b: "z" };
    const replica = { a: "x", b: "y\u001fb=sz" };
    expect(canonicalRow(master)).not.toBe(canonicalRow(replica));
    expect(digestOf([master])).not.toBe(digestOf([replica]));
  });
});

describe("canonicalRow", () => {
  it("encodes each column as name=typed value in column order", () => {
    expect(canonicalRow({ id: 7, name: "ann", gone: null })).toBe(
      "2:id=n7\u001f4:name=s3:ann\u001f4:gone=N",
    );
  });

  it("encodes undefined like null", () => {
    expect(canonicalRow({ v: undefined })).toBe(canonicalRow({ v: null }));
  });
});
