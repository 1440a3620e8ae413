/**
 * Exact SQLite values, and the one text encoding ("cell") every path uses to
 * carry them: row capture, the log, snapshots, verify and query results.
 *
 * The runtime's JS API hands every INTEGER over as a double and binds every
 * number as a REAL, so values never cross it as JS numbers: SQL renders each
 * value as a cell (typeof tag + exact text) and SQL parses cells back.
 *
 *   n            NULL
 *   i<decimal>   INTEGER, all 64 bits
 *   r<decimal>   REAL: quote()'s round-trip decimal, "-0.0", "9.0e+999", "-9.0e+999"
 *   s<text>      TEXT of printable ASCII only (no decoding needed)
 *   t<hex>       any other TEXT: its UTF-8 bytes, valid or not
 *   b<hex>       BLOB
 *
 * SQLite stores no NaN (it becomes NULL), so no cell carries one.
 */

/** TEXT whose bytes are not valid UTF-8: no JS string can hold it exactly. */
export interface TextBytes {
  textBytes: Uint8Array;
}

/** INTEGER as bigint, REAL as number, TEXT as string, BLOB as Uint8Array. */
export type Exact = null | bigint | number | string | Uint8Array | TextBytes;

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

export function isTextBytes(value: unknown): value is TextBytes {
  return typeof value === "object" && value !== null && "textBytes" in value;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0").toUpperCase());

export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const byte of bytes) out += HEX[byte];
  return out;
}

export function fromHex(hex: string): Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9A-Fa-f]*$/.test(hex)) throw new Error(`bad hex: ${hex}`);
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

/** TEXT bytes as a JS string when they are valid UTF-8, else kept as bytes. */
export function textFromBytes(bytes: Uint8Array): string | TextBytes {
  try {
    return utf8.decode(bytes);
  } catch {
    return { textBytes: bytes };
  }
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** REAL text as quote() prints it, with the cases quote() cannot print. */
function realText(value: number): string {
  if (Object.is(value, -0)) return "-0.0";
  if (value === Number.POSITIVE_INFINITY) return "9.0e+999";
  if (value === Number.NEGATIVE_INFINITY) return "-9.0e+999";
  if (Number.isNaN(value)) throw new Error("SQLite stores no NaN");
  const text = String(value);
  return /[.eEn]/.test(text) ? text : `${text}.0`;
}

export function encodeCell(value: Exact): string {
  if (value === null) return "n";
  if (typeof value === "bigint") return `i${value}`;
  if (typeof value === "number") return `r${realText(value)}`;
  if (typeof value === "string") {
    return PRINTABLE_ASCII.test(value) ? `s${value}` : `t${toHex(encoder.encode(value))}`;
  }
  if (value instanceof Uint8Array) return `b${toHex(value)}`;
  return `t${toHex(value.textBytes)}`;
}

export function decodeCell(cell: string): Exact {
  const tag = cell.charAt(0);
  const body = cell.slice(1);
  switch (tag) {
    case "n":
      return null;
    case "i":
      return BigInt(body);
    case "r":
      return Number.parseFloat(body);
    case "s":
      return body;
    case "t":
      return textFromBytes(fromHex(body));
    case "b":
      return fromHex(body);
    default:
      throw new Error(`bad cell: ${cell.slice(0, 20)}`);
  }
}

/** Cells are joined by U+001F, which no cell contains (`s` cells are printable ASCII). */
export function encodeRow(values: readonly Exact[]): string {
  return values.map(encodeCell).join("\u001f");
}

export function decodeRow(image: string): Exact[] {
  return image === "" ? [] : image.split("\u001f").map(decodeCell);
}

/**
 * SQL that renders `x` as a cell. `x` is read several times, so it must be a
 * column or a trigger's NEW./OLD. reference, never an expression with effects.
 * atan2(x, -1) is the one test that tells -0.0 from 0.0 in SQL.
 */
export function cellSql(x: string): string {
  return (
    `CASE typeof(${x}) WHEN 'integer' THEN 'i' || ${x} ` +
    `WHEN 'real' THEN CASE WHEN ${x} = 0 AND atan2(${x}, -1.0) < 0 THEN 'r-0.0' ELSE 'r' || quote(${x}) END ` +
    `WHEN 'text' THEN CASE WHEN ${x} GLOB '*[^ -~]*' OR length(${x}) <> length(CAST(${x} AS BLOB)) ` +
    `THEN 't' || hex(${x}) ELSE 's' || ${x} END ` +
    `WHEN 'blob' THEN 'b' || hex(${x}) ELSE 'n' END`
  );
}

/** SQL that renders a row of cells, separated as encodeRow separates them. */
export function rowSql(columns: readonly string[]): string {
  if (columns.length === 0) return "''";
  return joinBalanced(columns.map((c) => `(${cellSql(c)})`));
}

/**
 * `a || char(31) || b || ...` as a balanced tree: a chain of `||` is as deep as
 * it is long, and SQLite refuses expressions deeper than 100 (Durable Objects
 * keep that limit), which a chain over 48 columns would pass.
 */
function joinBalanced(parts: readonly string[]): string {
  if (parts.length === 1) return parts[0] ?? "''";
  const half = Math.ceil(parts.length / 2);
  return `(${joinBalanced(parts.slice(0, half))} || char(31) || ${joinBalanced(parts.slice(half))})`;
}

/**
 * A value as an SQL literal that SQLite reads back exactly, except REAL,
 * whose decimal parsing is not guaranteed to round the way the value was
 * printed: REALs are bound as parameters instead (see SqlBuilder).
 */
export function literalSql(value: Exclude<Exact, number>): string {
  if (value === null) return "NULL";
  if (typeof value === "bigint") {
    // -9223372036854775808 is not a literal SQLite can read: its magnitude overflows.
    return value === INT64_MIN ? "(-9223372036854775807 - 1)" : value.toString();
  }
  if (typeof value === "string") {
    return PRINTABLE_ASCII.test(value)
      ? `'${value.replaceAll("'", "''")}'`
      : `CAST(X'${toHex(encoder.encode(value))}' AS TEXT)`;
  }
  if (value instanceof Uint8Array) return `X'${toHex(value)}'`;
  return `CAST(X'${toHex(value.textBytes)}' AS TEXT)`;
}

/** Builds SQL with exact values: literals inline, REALs as `?` parameters. */
export class SqlBuilder {
  readonly params: number[] = [];

  value(value: Exact): string {
    if (typeof value === "number") {
      this.params.push(value);
      return "?";
    }
    return literalSql(value);
  }
}

/** Bytes of a cell or row image in the log (UTF-8; cells are ASCII but for `s` text). */
export function textBytes(text: string): number {
  return encoder.encode(text).length;
}

/**
 * Whether two values are the same value of the same storage class. Cells made
 * in SQL and in JS may spell one REAL differently ("1.0e+21", "1e+21"), so
 * compare decoded values, never cells from the two sides.
 */
export function equalExact(a: Exact, b: Exact): boolean {
  if (typeof a === "number" && typeof b === "number") return Object.is(a, b);
  return encodeCell(a) === encodeCell(b);
}
