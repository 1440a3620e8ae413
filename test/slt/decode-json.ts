/**
 * The cluster's JSON encoding of one SQLite value, back to the value. JSON
 * numbers cannot say whether SQLite returned an INTEGER or a REAL (2 and 2.0
 * are both `2`), and an integer beyond 2^53 arrives rounded: tagged objects
 * like the `{"base64": ...}` of a blob are how the API says more, so each tag
 * has its decoder in TAGGED_VALUES and a new encoding is one more entry.
 */
import { type SqlValue, sqlBlob, sqlInteger, sqlNull, sqlReal, sqlText } from "./sql-value";

type TaggedDecoder = (payload: unknown) => SqlValue | undefined;

function base64Bytes(payload: unknown): SqlValue | undefined {
  if (typeof payload !== "string") return undefined;
  const binary = atob(payload);
  return sqlBlob(Uint8Array.from(binary, (char) => char.charCodeAt(0)));
}

function int(payload: unknown): SqlValue | undefined {
  return typeof payload === "string" && /^-?\d+$/.test(payload)
    ? sqlInteger(BigInt(payload))
    : undefined;
}

const SPECIAL_REALS: Readonly<Record<string, number>> = {
  Infinity: Number.POSITIVE_INFINITY,
  "-Infinity": Number.NEGATIVE_INFINITY,
  "-0.0": -0,
};

function real(payload: unknown): SqlValue | undefined {
  if (typeof payload === "number") return sqlReal(payload);
  const special = typeof payload === "string" ? SPECIAL_REALS[payload] : undefined;
  return special === undefined ? undefined : sqlReal(special);
}

function textBytes(payload: unknown): SqlValue | undefined {
  if (typeof payload !== "string") return undefined;
  const bytes = Uint8Array.from(atob(payload), (char) => char.charCodeAt(0));
  return sqlText(new TextDecoder().decode(bytes));
}

/** Decoders of `{"<tag>": payload}` objects, by tag (docs/api.md, "Values"). */
const TAGGED_VALUES: Readonly<Record<string, TaggedDecoder>> = {
  base64: base64Bytes,
  int,
  real,
  textBytes,
};

/** Integral numbers past this cannot be a 64-bit INTEGER. */
const INT64_LIMIT = 2 ** 63;

/**
 * A plain JSON number: the API sends an integral one only for an INTEGER
 * within ±(2^53-1) (an integral REAL comes as {"real": n}), so integral means
 * INTEGER and anything else is a REAL.
 */
function plainNumber(value: number): SqlValue {
  return Number.isInteger(value) && Math.abs(value) < INT64_LIMIT
    ? sqlInteger(BigInt(value))
    : sqlReal(value);
}

export function decodeJsonValue(json: unknown): SqlValue {
  if (json === null) return sqlNull;
  if (typeof json === "string") return sqlText(json);
  if (typeof json === "number") return plainNumber(json);
  if (typeof json === "object" && !Array.isArray(json)) {
    const entries = Object.entries(json);
    const [tag, payload] = entries[0] ?? [];
    const decoded =
      entries.length === 1 && tag !== undefined ? TAGGED_VALUES[tag]?.(payload) : undefined;
    if (decoded !== undefined) return decoded;
  }
  throw new Error(`not an encoded SQLite value: ${JSON.stringify(json)?.slice(0, 80)}`);
}
