/**
 * Values between Hrana's JSON and SQLite's exact values. Integers travel as
 * decimal strings (all 64 bits), floats as JSON numbers, blobs as base64. A
 * JS number from `@libsql/client` arrives as a float even when integral, and
 * binds as a REAL, as sqld binds it: a TEXT column then stores "42.0".
 */
import { type ApiValue, fromBase64 } from "../api-values";
import { ApiError } from "../errors";
import { type Exact, INT64_MAX, INT64_MIN } from "../sql-value";
import type { HranaValue } from "./proto";

const INTEGER = /^[+-]?\d+$/;

/** A Hrana argument as the exact value to bind; a malformed one is a 400 naming where. */
export function fromHranaValue(value: HranaValue, where: string): Exact {
  switch (value.type) {
    case "null":
      return null;
    case "integer": {
      if (!INTEGER.test(value.value)) {
        throw new ApiError(
          "BAD_REQUEST",
          `${where}: "${value.value.slice(0, 40)}" is not an integer`,
        );
      }
      const n = BigInt(value.value);
      if (n < INT64_MIN || n > INT64_MAX) {
        throw new ApiError("BAD_REQUEST", `${where}: ${value.value} is outside 64 bits`);
      }
      return n;
    }
    case "float":
      return value.value;
    case "text":
      return value.value;
    case "blob":
      try {
        return fromBase64(padBase64(value.base64));
      } catch {
        throw new ApiError("BAD_REQUEST", `${where}: blob is not valid base64`);
      }
  }
}

/** sqld accepts base64 with or without its `=` padding. */
function padBase64(text: string): string {
  const rest = text.length % 4;
  return rest === 0 ? text : text + "=".repeat(4 - rest);
}

/**
 * A result value (docs/api.md "Values") in Hrana's form. TEXT whose bytes are
 * not valid UTF-8 cannot be a JSON string exactly: it goes as a blob of those
 * bytes. REAL ±Infinity and -0.0 are floats; stringifyHrana writes them so
 * that JSON.parse reads them back exactly.
 */
export function toHranaValue(value: ApiValue): HranaValue {
  if (value === null) return { type: "null" };
  if (typeof value === "string") return { type: "text", value };
  if (typeof value === "number") {
    return Number.isInteger(value)
      ? { type: "integer", value: String(value) }
      : { type: "float", value };
  }
  if ("int" in value) return { type: "integer", value: value.int };
  if ("real" in value) {
    const real = value.real;
    if (typeof real === "number") return { type: "float", value: real };
    if (real === "-0.0") return { type: "float", value: -0 };
    return { type: "float", value: real === "Infinity" ? Infinity : -Infinity };
  }
  if ("base64" in value) return { type: "blob", base64: value.base64 };
  return { type: "blob", base64: value.textBytes };
}

/**
 * JSON.stringify writes Infinity as null and -0 as 0. Hrana floats are JSON
 * numbers, and JSON.parse reads 1e999 as Infinity and -0.0 as -0, so those
 * are written as such and the values come back exactly. The placeholders
 * carry a random nonce, so no text a user stored can be mistaken for one.
 */
export function stringifyHrana(body: unknown): string {
  const nonce = crypto.randomUUID();
  const marks = { inf: `@${nonce}:inf`, negInf: `@${nonce}:-inf`, negZero: `@${nonce}:-0` };
  return JSON.stringify(body, (_key, v: unknown) => {
    if (typeof v !== "object" || v === null) return v;
    const o = v as { type?: unknown; value?: unknown };
    if (o.type !== "float" || typeof o.value !== "number") return v;
    if (o.value === Infinity) return { type: "float", value: marks.inf };
    if (o.value === -Infinity) return { type: "float", value: marks.negInf };
    if (Object.is(o.value, -0)) return { type: "float", value: marks.negZero };
    return v;
  })
    .replaceAll(`"${marks.inf}"`, "1e999")
    .replaceAll(`"${marks.negInf}"`, "-1e999")
    .replaceAll(`"${marks.negZero}"`, "-0.0");
}
