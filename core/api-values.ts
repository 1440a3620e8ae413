/**
 * Exact values in the HTTP API's JSON (docs/api.md, "Values"). Plain JSON
 * where JSON carries the value exactly, a one-key object where it cannot:
 *
 *   null, "text", 42 (an INTEGER within ±(2^53-1)), 4.5 (a REAL with a fraction)
 *   {"int": "9007199254740993"}   an INTEGER beyond ±(2^53-1) (any INTEGER, in params)
 *   {"real": 2}                   a REAL JSON would read as an integer
 *   {"real": "Infinity"}, {"real": "-Infinity"}, {"real": "-0.0"}
 *   {"base64": "AAE="}            a BLOB
 *   {"textBytes": "/w=="}         TEXT whose bytes are not valid UTF-8
 *
 * Parameters accept the same forms, plus booleans (INTEGER 1 and 0). A JSON
 * number with no fraction binds as an INTEGER; send {"real": 2} for REAL 2.0.
 */
import { ApiError } from "./errors";
import { type Exact, INT64_MAX, INT64_MIN, isTextBytes, textFromBytes } from "./sql-value";

export type ApiValue =
  | null
  | string
  | number
  | { int: string }
  | { real: number | string }
  | { base64: string }
  | { textBytes: string };

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array {
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    throw new ApiError("BAD_REQUEST", "not valid base64");
  }
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

export function toApiValue(value: Exact): ApiValue {
  if (value === null || typeof value === "string") return value;
  if (typeof value === "bigint") {
    return value >= -SAFE && value <= SAFE ? Number(value) : { int: value.toString() };
  }
  if (typeof value === "number") {
    if (Object.is(value, -0)) return { real: "-0.0" };
    if (value === Number.POSITIVE_INFINITY) return { real: "Infinity" };
    if (value === Number.NEGATIVE_INFINITY) return { real: "-Infinity" };
    return Number.isInteger(value) ? { real: value } : value;
  }
  if (isTextBytes(value)) return { textBytes: toBase64(value.textBytes) };
  return { base64: toBase64(value) };
}

function badParam(message: string): ApiError {
  return new ApiError("BAD_REQUEST", message);
}

function parseInt64(text: unknown): bigint {
  if (typeof text !== "string" || !/^-?\d{1,19}$/.test(text)) {
    throw badParam('{"int": ...} takes a decimal string of a 64-bit integer');
  }
  const value = BigInt(text);
  if (value < INT64_MIN || value > INT64_MAX) {
    throw badParam(`${text} does not fit a 64-bit signed integer`);
  }
  return value;
}

function parseReal(value: unknown): number {
  if (typeof value === "number" && Number.isFinite(value)) return value;
  if (value === "Infinity") return Number.POSITIVE_INFINITY;
  if (value === "-Infinity") return Number.NEGATIVE_INFINITY;
  if (value === "-0.0" || value === "-0") return -0;
  throw badParam('{"real": ...} takes a number, "Infinity", "-Infinity" or "-0.0"');
}

/** A parameter from the API's JSON; throws BAD_REQUEST naming what is wrong. */
export function fromApiValue(value: unknown): Exact {
  if (value === null || typeof value === "string") return value;
  if (typeof value === "boolean") return value ? 1n : 0n;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw badParam("numbers must be finite");
    if (!Number.isInteger(value)) return value;
    if (!Number.isSafeInteger(value)) {
      throw badParam(
        `${value} is beyond ±2^53 and JSON may have rounded it: send {"int": "<decimal>"}`,
      );
    }
    return BigInt(value);
  }
  if (typeof value === "object" && !Array.isArray(value)) {
    const entries = Object.entries(value as Record<string, unknown>);
    const [entry] = entries;
    if (entries.length === 1 && entry !== undefined) {
      const [key, inner] = entry;
      if (key === "int") return parseInt64(inner);
      if (key === "real") return parseReal(inner);
      if (key === "base64" && typeof inner === "string") return fromBase64(inner);
      if (key === "textBytes" && typeof inner === "string") {
        return textFromBytes(fromBase64(inner));
      }
    }
  }
  throw badParam(
    'a parameter is null, a string, a number, a boolean, or one of {"int": "..."}, ' +
      '{"real": ...}, {"base64": "..."}, {"textBytes": "..."}',
  );
}

/** Approximate bytes of a value in the JSON answer, for result limits. */
export function apiValueBytes(value: ApiValue): number {
  if (value === null || typeof value === "number") return 8;
  if (typeof value === "string") return value.length + 2;
  const inner = Object.values(value)[0];
  return 16 + (typeof inner === "string" ? inner.length : 8);
}
