/**
 * The client's values against the server's own codec (core/api-values.ts):
 * what the client encodes, the server binds as the value the caller meant,
 * and what the server answers, the client decodes without losing a bit.
 */
import { describe, expect, it } from "vitest";
import {
  type ApiValue,
  decodeExact,
  decodeRow,
  decodeValue,
  encodeValue,
  Real,
  real,
  type SqlParam,
  TextBytes,
  textBytes,
} from "../client/index.ts";
import { fromApiValue, toApiValue } from "../core/api-values";
import { isTextBytes, textFromBytes, type Exact } from "../core/sql-value";

/** What the server binds for a parameter the client sent (through JSON, as on the wire). */
const bound = (value: SqlParam): Exact =>
  fromApiValue(JSON.parse(JSON.stringify(encodeValue(value))));

/** What the client reads for a value the server answered (through JSON, as on the wire). */
const read = (value: Exact) => JSON.parse(JSON.stringify(toApiValue(value))) as ApiValue;

const bytes = (...b: number[]) => new Uint8Array(b);

describe("client values", () => {
  it("binds each JavaScript value as the SQLite value it stands for", () => {
    expect(bound(null)).toBe(null);
    expect(bound("text")).toBe("text");
    expect(bound(42)).toBe(42n);
    expect(bound(-0)).toBe(0n);
    expect(bound(4.5)).toBe(4.5);
    expect(bound(true)).toBe(1n);
    expect(bound(2n ** 63n - 1n)).toBe(2n ** 63n - 1n);
    expect(bound(-(2n ** 63n))).toBe(-(2n ** 63n));
    expect(bound(2n ** 53n + 1n)).toBe(2n ** 53n + 1n);
    expect(bound(real(2))).toBe(2);
    expect(Object.is(bound(real(-0)), -0)).toBe(true);
    expect(bound(Number.POSITIVE_INFINITY)).toBe(Number.POSITIVE_INFINITY);
    expect(bound(real(Number.NEGATIVE_INFINITY))).toBe(Number.NEGATIVE_INFINITY);
    expect(bound(bytes(0, 1, 255))).toEqual(bytes(0, 1, 255));
    const text = bound(textBytes(bytes(0xff, 0x41)));
    expect(isTextBytes(text)).toBe(true);
    expect(text).toEqual(textFromBytes(bytes(0xff, 0x41)));
  });

  it("refuses what would reach the server as another value", () => {
    expect(() => encodeValue(2 ** 53)).toThrow(RangeError);
    expect(() => encodeValue(2n ** 63n)).toThrow(RangeError);
    expect(() => encodeValue(Number.NaN)).toThrow(TypeError);
    expect(() => encodeValue({ int: "1", real: 2 } as unknown as SqlParam)).toThrow(TypeError);
    expect(() => encodeValue([1] as unknown as SqlParam)).toThrow(TypeError);
  });

  it("decodes every value the server sends, exactly", () => {
    expect(decodeValue(read(2n ** 63n - 1n))).toBe(2n ** 63n - 1n);
    expect(decodeValue(read(-(2n ** 53n) - 1n))).toBe(-(2n ** 53n) - 1n);
    expect(decodeValue(read(7n))).toBe(7);
    expect(decodeValue(read(2))).toBe(2);
    expect(Object.is(decodeValue(read(-0)), -0)).toBe(true);
    expect(decodeValue(read(Number.POSITIVE_INFINITY))).toBe(Number.POSITIVE_INFINITY);
    expect(decodeValue(read(0.1))).toBe(0.1);
    expect(decodeValue(read(bytes(1, 2, 3)))).toEqual(bytes(1, 2, 3));
    const text = decodeValue(read(textFromBytes(bytes(0xc3, 0x28))));
    expect(text).toBeInstanceOf(TextBytes);
    expect((text as TextBytes).bytes).toEqual(bytes(0xc3, 0x28));
  });

  it("round-trips every storage class exactly through decodeExact and back", () => {
    const values: Exact[] = [
      null,
      "",
      "héllo",
      0n,
      1n,
      -1n,
      2n ** 53n - 1n,
      2n ** 53n,
      2n ** 53n + 1n,
      2n ** 63n - 1n,
      -(2n ** 63n),
      0.5,
      2,
      -0,
      1e300,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      Number.MIN_VALUE,
      bytes(),
      bytes(0, 255, 128),
      textFromBytes(bytes(0xff)),
    ];
    for (const value of values) {
      const exact = decodeExact(read(value));
      const back = bound(exact);
      if (typeof value === "number") {
        expect(exact, String(value)).toBeInstanceOf(Real);
        expect(Object.is(back, value), String(value)).toBe(true);
      } else {
        expect(back, String(value)).toEqual(value);
      }
      if (typeof value === "bigint") expect(exact).toBe(value);
    }
  });

  it("decodes rows in either format", () => {
    expect(decodeRow({ a: { int: "9007199254740993" }, b: { base64: "AAE=" } })).toEqual({
      a: 9007199254740993n,
      b: bytes(0, 1),
    });
    expect(decodeRow([1, { real: 2 }], decodeExact)).toEqual([1n, new Real(2)]);
  });
});
