/**
 * What sqlite3_column_text(), sqlite3_column_int() and sqlite3_column_double()
 * return for a value of each storage class. sqllogictest formats its results
 * with these calls, so a conforming runner has to convert the way SQLite does,
 * not the way JavaScript would.
 */
import type { SqlValue } from "./sql-value";

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** sqlite3Isspace: the C locale's spaces. */
const LEADING_SPACE = /^[ \t\n\v\f\r]*/;

/** The longest prefix sqlite3AtoF reads as a number. */
const NUMERIC_PREFIX = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/;

const utf8 = new TextEncoder();
const latin1 = new TextDecoder("latin1");

/** sqlite3Atoi64: optional sign and leading digits; out-of-range values clamp. */
function textToInt64(text: string): bigint {
  const digits = /^[+-]?\d+/.exec(text.replace(LEADING_SPACE, ""))?.[0];
  if (digits === undefined) return 0n;
  const value = BigInt(digits);
  return value < INT64_MIN ? INT64_MIN : value > INT64_MAX ? INT64_MAX : value;
}

/** sqlite3AtoF: the numeric prefix of the text, 0 without one. */
function textToDouble(text: string): number {
  const prefix = NUMERIC_PREFIX.exec(text.replace(LEADING_SPACE, ""))?.[0];
  return prefix === undefined ? 0 : Number(prefix);
}

/** The largest double below 2^63, where sqlite3RealToI64 starts to clamp. */
const LARGEST_EXACT_BELOW_2_63 = 2 ** 63 - 1024;

/** sqlite3RealToI64: truncation toward zero, clamped at the 64-bit range. */
function realToInt64(value: number): bigint {
  if (Number.isNaN(value)) return 0n;
  if (value < -LARGEST_EXACT_BELOW_2_63) return INT64_MIN;
  if (value > LARGEST_EXACT_BELOW_2_63) return INT64_MAX;
  return BigInt(Math.trunc(value));
}

/** SQLite's printf "%!.15g", its conversion of a REAL to TEXT. */
export function realToText(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value < 0 ? "-Inf" : "Inf";
  if (value === 0) return "0.0";
  const sign = value < 0 ? "-" : "";
  const [mantissa = "", exponentText = "0"] = Math.abs(value).toExponential(14).split("e");
  const digits = mantissa.replace(".", "");
  const exponent = Number(exponentText);
  // "!" keeps a decimal point and one digit after it, where %g would drop both.
  const withPoint = (whole: string, fraction: string) =>
    `${whole}.${fraction.replace(/0+$/, "") || "0"}`;
  if (exponent < -4 || exponent >= 15) {
    const magnitude = String(Math.abs(exponent)).padStart(2, "0");
    return `${sign}${withPoint(digits.slice(0, 1), digits.slice(1))}e${exponent < 0 ? "-" : "+"}${magnitude}`;
  }
  if (exponent < 0) return `${sign}${withPoint("0", "0".repeat(-exponent - 1) + digits)}`;
  return `${sign}${withPoint(digits.slice(0, exponent + 1), digits.slice(exponent + 1))}`;
}

/**
 * SQLite's printf "%.3f". It rounds half away from zero on the exact decimal
 * expansion (as toFixed does) but keeps at most 16 significant digits, so from
 * 1e13 on the last decimals are zeros where toFixed would print exact digits.
 */
export function printfFixed3(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value < 0 ? "-Inf" : "Inf";
  if (Math.abs(value) < 1e13) return value.toFixed(3);
  const [mantissa = "", exponentText = "0"] = Math.abs(value).toExponential(15).split("e");
  // 16 significant digits times 10^(exponent - 15), in thousandths; exponent >= 13 here.
  const thousandths = BigInt(mantissa.replace(".", "")) * 10n ** BigInt(Number(exponentText) - 12);
  const text = thousandths.toString();
  return `${value < 0 ? "-" : ""}${text.slice(0, -3)}.${text.slice(-3)}`;
}

/** sqlite3_column_text() as C sees it: bytes up to the first NUL, or null for NULL. */
export function columnText(value: SqlValue): Uint8Array | null {
  let bytes: Uint8Array;
  switch (value.type) {
    case "null":
      return null;
    case "integer":
      bytes = utf8.encode(value.value.toString());
      break;
    case "real":
      bytes = utf8.encode(realToText(value.value));
      break;
    case "text":
      bytes = utf8.encode(value.value);
      break;
    case "blob":
      bytes = value.value;
      break;
  }
  const nul = bytes.indexOf(0);
  return nul < 0 ? bytes : bytes.subarray(0, nul);
}

/** sqlite3_column_int(): the 64-bit conversion, then its low 32 bits as a C int. */
export function columnInt(value: SqlValue): number {
  let wide: bigint;
  switch (value.type) {
    case "null":
      wide = 0n;
      break;
    case "integer":
      wide = value.value;
      break;
    case "real":
      wide = realToInt64(value.value);
      break;
    case "text":
      wide = textToInt64(value.value);
      break;
    case "blob":
      wide = textToInt64(latin1.decode(value.value));
      break;
  }
  return Number(BigInt.asIntN(32, wide));
}

/** sqlite3_column_double(). */
export function columnDouble(value: SqlValue): number {
  switch (value.type) {
    case "null":
      return 0;
    case "integer":
      return Number(value.value);
    case "real":
      return value.value;
    case "text":
      return textToDouble(value.value);
    case "blob":
      return textToDouble(latin1.decode(value.value));
  }
}
