import { describe, expect, it } from "vitest";
import { decodeJsonValue } from "./slt/decode-json";
import { sqlBlob, sqlInteger, sqlNull, sqlReal, sqlText } from "./slt/sql-value";

describe("decoding the API's JSON values", () => {
  it("reads null, strings, numbers and base64 blobs", () => {
    expect(decodeJsonValue(null)).toEqual(sqlNull);
    expect(decodeJsonValue("x")).toEqual(sqlText("x"));
    expect(decodeJsonValue(7)).toEqual(sqlInteger(7n));
    expect(decodeJsonValue(-2.5)).toEqual(sqlReal(-2.5));
    expect(decodeJsonValue({ base64: "AP8=" })).toEqual(sqlBlob(new Uint8Array([0, 255])));
  });

  it("refuses what it cannot read instead of guessing", () => {
    expect(() => decodeJsonValue({ base64: 1 })).toThrow(/not an encoded SQLite value/);
    expect(() => decodeJsonValue({ unknown: "1" })).toThrow(/not an encoded SQLite value/);
    expect(() => decodeJsonValue([1])).toThrow(/not an encoded SQLite value/);
    expect(() => decodeJsonValue(true)).toThrow(/not an encoded SQLite value/);
  });
});
