/**
 * sqllogictest's result text: one string per value (slt_sqlite.c), sorted as
 * the record asks, then either the values or, past the hash threshold,
 * "N values hashing to <md5>" (sqllogictest.c).
 */
import { createHash } from "node:crypto";
import type { ColumnType, SortMode } from "./parse";
import type { SqlValue } from "./sql-value";
import { columnDouble, columnInt, columnText, printfFixed3 } from "./sqlite-convert";

const PRINTABLE_FIRST = 0x20; // ' '
const PRINTABLE_LAST = 0x7e; // '~'

/** One value as the reference prints it for a column of the given type. */
export function formatValue(value: SqlValue, type: ColumnType): string {
  if (value.type === "null") return "NULL";
  switch (type) {
    case "I":
      return String(columnInt(value));
    case "R":
      return printfFixed3(columnDouble(value));
    case "T": {
      const bytes = columnText(value) ?? new Uint8Array();
      if (bytes.length === 0) return "(empty)";
      // Byte by byte, so a character of several UTF-8 bytes becomes as many '@'.
      let text = "";
      for (const byte of bytes) {
        text += byte < PRINTABLE_FIRST || byte > PRINTABLE_LAST ? "@" : String.fromCharCode(byte);
      }
      return text;
    }
  }
}

/** Every value of every row, row after row. */
export function formatRows(
  rows: readonly (readonly SqlValue[])[],
  types: readonly ColumnType[],
): string[] {
  return rows.flatMap((row) => row.map((value, i) => formatValue(value, types[i] ?? "T")));
}

/** strcmp on these strings: they are printable ASCII, so code units compare as bytes do. */
const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Sorts whole rows (`rowsort`, column by column) or single values (`valuesort`). */
export function sortValues(values: readonly string[], columns: number, sort: SortMode): string[] {
  if (sort === "nosort") return [...values];
  if (sort === "valuesort") return [...values].sort(byteOrder);
  const rows: string[][] = [];
  for (let i = 0; i < values.length; i += columns) rows.push(values.slice(i, i + columns));
  rows.sort((a, b) => {
    for (let i = 0; i < columns; i++) {
      const order = byteOrder(a[i] ?? "", b[i] ?? "");
      if (order !== 0) return order;
    }
    return 0;
  });
  return rows.flat();
}

/** md5 over every value followed by "\n", in lowercase hex. */
export function hashValues(values: readonly string[]): string {
  const md5 = createHash("md5");
  for (const value of values) md5.update(`${value}\n`);
  return md5.digest("hex");
}

export function hashLine(values: readonly string[]): string {
  return `${values.length} values hashing to ${hashValues(values)}`;
}

/**
 * The lines a result is compared with: the values themselves up to the
 * threshold, one hash line past it. A threshold of 0 (or less) never hashes.
 */
export function resultLines(values: readonly string[], hashThreshold: number): string[] {
  return hashThreshold > 0 && values.length > hashThreshold ? [hashLine(values)] : [...values];
}

const HASH_LINE = /^\d+ values hashing to ([0-9a-f]{32})$/;

/**
 * The hash a label is filed under for a result given as expected lines (a
 * record skipped for this engine still files its label, as the reference does).
 */
export function hashOfExpected(expected: readonly string[]): string {
  const only = expected.length === 1 ? expected[0] : undefined;
  const hashed = only === undefined ? undefined : HASH_LINE.exec(only)?.[1];
  return hashed ?? hashValues(expected);
}
