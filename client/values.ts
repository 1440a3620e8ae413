/**
 * SQLite values as the HTTP API carries them (docs/api.md, "Values") and as a
 * caller holds them in JavaScript.
 *
 * JSON numbers are doubles, so the API sends plain JSON only where that is
 * exact and a one-key object where it is not: {"int"} for a 64-bit INTEGER
 * beyond ±(2^53-1), {"real"} for a REAL that JSON would read as an integer (or
 * ±Infinity, -0.0), {"base64"} for a BLOB, {"textBytes"} for TEXT that is not
 * valid UTF-8. Here a bigint stands for a 64-bit INTEGER, a Uint8Array for a
 * BLOB, and `Real` / `TextBytes` mark the two cases JavaScript has no type for.
 */
import { base64FromBytes, bytesFromBase64 } from "./base64.ts";

/** A value in the API's JSON, as results carry it and parameters accept it. */
export type ApiValue =
  | null
  | string
  | number
  | { int: string }
  | { real: number | string }
  | { base64: string }
  | { textBytes: string };

/** What a parameter becomes on the wire: an ApiValue, or a boolean (INTEGER 1 or 0). */
export type ApiParam = ApiValue | boolean;

/** A REAL sent as a REAL even when it is integral (2.0), infinite or -0.0. */
export class Real {
  readonly value: number;
  constructor(value: number) {
    this.value = value;
  }
  /** So that arithmetic and comparisons on a decoded REAL work as on a number. */
  valueOf(): number {
    return this.value;
  }
}

/** TEXT whose bytes are not valid UTF-8: a JavaScript string cannot hold them. */
export class TextBytes {
  readonly bytes: Uint8Array;
  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
  }
}

export const real = (value: number): Real => new Real(value);
export const textBytes = (bytes: Uint8Array): TextBytes => new TextBytes(bytes);

/**
 * What a caller may bind. A plain integral number binds as an INTEGER (as the
 * server reads JSON); use a bigint beyond ±(2^53-1) and `real(x)` for a REAL
 * with no fraction. ApiValue objects pass through, so a value read from a
 * result can be sent back as it came.
 */
export type SqlParam =
  | null
  | string
  | number
  | bigint
  | boolean
  | Uint8Array
  | Real
  | TextBytes
  | { int: string }
  | { real: number | string }
  | { base64: string }
  | { textBytes: string };

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const WIRE_KEYS = new Set(["int", "real", "base64", "textBytes"]);

function encodeReal(value: number): { real: number | string } {
  if (Number.isNaN(value)) throw new TypeError("NaN has no SQLite value (SQLite stores NULL)");
  if (value === Number.POSITIVE_INFINITY) return { real: "Infinity" };
  if (value === Number.NEGATIVE_INFINITY) return { real: "-Infinity" };
  if (Object.is(value, -0)) return { real: "-0.0" };
  return { real: value };
}

/**
 * One parameter in the API's JSON. Throws rather than send a value the server
 * would read differently from what the caller holds.
 */
export function encodeValue(value: SqlParam): ApiParam {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return encodeReal(value);
    // The server binds an integral JSON number as an INTEGER and refuses one
    // beyond 2^53, since JSON may already have rounded it; so does the client.
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
      throw new RangeError(
        `${value} is beyond ±(2^53-1): pass a bigint for an INTEGER, or real(x) for a REAL`,
      );
    }
    return value;
  }
  if (typeof value === "bigint") {
    if (value < INT64_MIN || value > INT64_MAX) {
      throw new RangeError(`${value} does not fit SQLite's 64-bit INTEGER`);
    }
    return value >= -SAFE && value <= SAFE ? Number(value) : { int: value.toString() };
  }
  if (value instanceof Uint8Array) return { base64: base64FromBytes(value) };
  if (value instanceof Real) return encodeReal(value.value);
  if (value instanceof TextBytes) return { textBytes: base64FromBytes(value.bytes) };
  if (typeof value === "object") {
    const keys = Object.keys(value);
    if (keys.length === 1 && WIRE_KEYS.has(keys[0] as string)) return { ...value } as ApiValue;
  }
  throw new TypeError(`not an SQLite value: ${String(value)}`);
}

function decodeRealText(value: number | string): number {
  if (typeof value === "number") return value;
  if (value === "Infinity") return Number.POSITIVE_INFINITY;
  if (value === "-Infinity") return Number.NEGATIVE_INFINITY;
  if (value === "-0.0" || value === "-0") return -0;
  throw new TypeError(`not a REAL in the API's form: ${JSON.stringify(value)}`);
}

function wireObject(value: object): [string, unknown] {
  const entries = Object.entries(value);
  const entry = entries[0];
  if (entries.length !== 1 || entry === undefined || !WIRE_KEYS.has(entry[0])) {
    throw new TypeError(`not an API value: ${JSON.stringify(value)}`);
  }
  return entry;
}

/** A JavaScript value as the caller holds it: what decodeValue gives. */
export type JsValue = null | string | number | bigint | Uint8Array | TextBytes;

/**
 * A result value for everyday use: numbers as numbers (a REAL 2.0 reads as 2),
 * an INTEGER beyond ±(2^53-1) as a bigint, a BLOB as a Uint8Array. No value is
 * rounded; only the INTEGER/REAL distinction of an integral number is dropped
 * (decodeExact keeps it).
 */
export function decodeValue(value: ApiValue): JsValue {
  if (value === null || typeof value === "string" || typeof value === "number") return value;
  const [key, inner] = wireObject(value);
  if (key === "int" && typeof inner === "string") return BigInt(inner);
  if (key === "real" && (typeof inner === "number" || typeof inner === "string")) {
    return decodeRealText(inner);
  }
  if (key === "base64" && typeof inner === "string") return bytesFromBase64(inner);
  if (key === "textBytes" && typeof inner === "string")
    return new TextBytes(bytesFromBase64(inner));
  throw new TypeError(`not an API value: ${JSON.stringify(value)}`);
}

/** A value with its storage class: what decodeExact gives, and a valid SqlParam. */
export type ExactValue = null | string | bigint | Real | Uint8Array | TextBytes;

/**
 * A result value with its storage class kept: every INTEGER a bigint, every
 * REAL a `Real`. encodeValue(decodeExact(v)) is v again, for every value.
 */
export function decodeExact(value: ApiValue): ExactValue {
  if (typeof value === "number") {
    // The API sends a REAL as plain JSON only when it has a fraction.
    return Number.isInteger(value) ? BigInt(value) : new Real(value);
  }
  const decoded = decodeValue(value);
  if (typeof decoded === "number") return new Real(decoded);
  return decoded;
}

/** Decodes every value of a row, whichever format the rows came in (decodeValue unless told). */
export function decodeRow(row: Record<string, ApiValue>): Record<string, JsValue>;
export function decodeRow(row: ApiValue[]): JsValue[];
export function decodeRow<T>(
  row: Record<string, ApiValue>,
  decode: (v: ApiValue) => T,
): Record<string, T>;
export function decodeRow<T>(row: ApiValue[], decode: (v: ApiValue) => T): T[];
export function decodeRow(
  row: Record<string, ApiValue> | ApiValue[],
  decode: (v: ApiValue) => unknown = decodeValue,
): Record<string, unknown> | unknown[] {
  if (Array.isArray(row)) return row.map(decode);
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) out[name] = decode(value);
  return out;
}
