import { describe, expect, it } from "vitest";
import { formatRows, formatValue, hashValues, resultLines, sortValues } from "./slt/format";
import { sqlBlob, sqlInteger, sqlNull, sqlReal, sqlText } from "./slt/sql-value";
import { printfFixed3, realToText } from "./slt/sqlite-convert";

describe("sqllogictest value formatting", () => {
  it("prints NULL for a null in every column type", () => {
    for (const type of ["T", "I", "R"] as const) expect(formatValue(sqlNull, type)).toBe("NULL");
  });

  it("prints text with (empty) for '' and '@' for every byte outside printable ASCII", () => {
    expect(formatValue(sqlText("abc ~"), "T")).toBe("abc ~");
    expect(formatValue(sqlText(""), "T")).toBe("(empty)");
    expect(formatValue(sqlText("a\tb\n"), "T")).toBe("a@b@");
    // é is two bytes in UTF-8, so two '@'.
    expect(formatValue(sqlText("café"), "T")).toBe("caf@@");
    expect(formatValue(sqlBlob(new Uint8Array([0x41, 0x7f, 0x42])), "T")).toBe("A@B");
  });

  it("ends text at a NUL, as a C string does", () => {
    expect(formatValue(sqlText("ab\u0000cd"), "T")).toBe("ab");
    expect(formatValue(sqlBlob(new Uint8Array([0, 0x41])), "T")).toBe("(empty)");
  });

  it("prints numbers in a text column as SQLite converts them to text", () => {
    expect(formatValue(sqlInteger(-42n), "T")).toBe("-42");
    expect(formatValue(sqlReal(2), "T")).toBe("2.0");
    expect(formatValue(sqlReal(0.5), "T")).toBe("0.5");
    expect(realToText(1 / 3)).toBe("0.333333333333333");
    expect(realToText(1e20)).toBe("1.0e+20");
    expect(realToText(-1.5e-7)).toBe("-1.5e-07");
    expect(realToText(123456.789)).toBe("123456.789");
  });

  it("prints an integer column as sqlite3_column_int() with %d: 32 bits", () => {
    expect(formatValue(sqlInteger(-7n), "I")).toBe("-7");
    expect(formatValue(sqlInteger(2n ** 32n + 5n), "I")).toBe("5");
    expect(formatValue(sqlInteger(2n ** 31n), "I")).toBe("-2147483648");
    expect(formatValue(sqlReal(-3.9), "I")).toBe("-3");
    expect(formatValue(sqlReal(1e30), "I")).toBe("-1");
    expect(formatValue(sqlText("  12abc"), "I")).toBe("12");
    expect(formatValue(sqlText("x"), "I")).toBe("0");
  });

  it("prints a real column with SQLite's %.3f", () => {
    expect(formatValue(sqlInteger(3n), "R")).toBe("3.000");
    expect(formatValue(sqlReal(-0.0004), "R")).toBe("-0.000");
    expect(formatValue(sqlReal(2.0625), "R")).toBe("2.063");
    expect(formatValue(sqlText("1.5e1x"), "R")).toBe("15.000");
    // Past 16 significant digits SQLite prints zeros.
    expect(printfFixed3(123456789012345.67)).toBe("123456789012345.700");
    expect(printfFixed3(1e20)).toBe("100000000000000000000.000");
  });

  it("formats rows value by value with each column's type", () => {
    expect(
      formatRows(
        [
          [sqlInteger(1n), sqlText("")],
          [sqlNull, sqlText("b")],
        ],
        ["I", "T"],
      ),
    ).toEqual(["1", "(empty)", "NULL", "b"]);
  });
});

describe("sqllogictest sorting and hashing", () => {
  const values = ["2", "b", "10", "a", "1", "c"];

  it("keeps the order for nosort", () => {
    expect(sortValues(values, 2, "nosort")).toEqual(values);
  });

  it("sorts whole rows, column by column, for rowsort", () => {
    expect(sortValues(values, 2, "rowsort")).toEqual(["1", "c", "10", "a", "2", "b"]);
  });

  it("sorts every value on its own for valuesort", () => {
    expect(sortValues(values, 2, "valuesort")).toEqual(["1", "10", "2", "a", "b", "c"]);
  });

  it("hashes each value followed by a newline with md5", () => {
    // printf '1\n2\n3\n4\n5\n6\n7\n8\n9\n' | md5sum
    const nine = ["1", "2", "3", "4", "5", "6", "7", "8", "9"];
    expect(hashValues(nine)).toBe("22e400a2ddbb013acf2a5852d6ab69fc");
    expect(hashValues([])).toBe("d41d8cd98f00b204e9800998ecf8427e");
  });

  it("replaces the values by one hash line only past the threshold", () => {
    const nine = ["1", "2", "3", "4", "5", "6", "7", "8", "9"];
    expect(resultLines(nine.slice(0, 8), 8)).toEqual(nine.slice(0, 8));
    expect(resultLines(nine, 8)).toEqual(["9 values hashing to 22e400a2ddbb013acf2a5852d6ab69fc"]);
    expect(resultLines(nine, 0)).toEqual(nine);
  });
});
