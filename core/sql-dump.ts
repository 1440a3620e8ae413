/**
 * The lines of a SQL dump in the format of `sqlite3 .dump --preserve-rowids`,
 * made from exact row images (cells, sql-value.ts), so that `sqlite3 new.db <
 * dump.sql` (or any SQLite's exec) gives back every value exactly:
 *
 *   NULL; INTEGER as its decimal text, all 64 bits; REAL as quote() prints it
 *   (which SQLite reads back to the same double), -0.0, and ±Inf as
 *   9.0e+999; TEXT quoted, or as CAST(X'..' AS TEXT) when its bytes are not
 *   valid UTF-8 or hold control characters a text file would mangle; BLOB as
 *   X'..'.
 *
 * Every INSERT names its columns, the rowid's expression first for rowid
 * tables (`rowid`, or `oid` / `_rowid_` when a column is named rowid; the
 * INTEGER PRIMARY KEY column when there is one), so rowids survive; generated
 * columns are never inserted (SQLite computes them).
 */
import { quoteIdent, quoteString } from "./sql-lexer";
import { fromHex } from "./sql-value";

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Control characters (C0, DEL): they would not survive a text file's round trips as typed. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: exactly what it looks for
const CONTROL = /[\u0000-\u001f\u007f]/;

/** One cell as the SQL literal SQLite reads back to the same value. */
export function literalFromCell(cell: string): string {
  const body = cell.slice(1);
  switch (cell.charAt(0)) {
    case "n":
      return "NULL";
    case "i":
    case "r":
      // quote()'s REAL text (or -0.0, ±9.0e+999) and the INTEGER's decimal are literals as they are.
      return body;
    case "s":
      return quoteString(body);
    case "t":
      return textLiteral(body);
    case "b":
      return `X'${body}'`;
    default:
      throw new Error(`bad cell: ${cell.slice(0, 20)}`);
  }
}

function textLiteral(hex: string): string {
  try {
    const text = utf8.decode(fromHex(hex));
    if (!CONTROL.test(text)) return quoteString(text);
  } catch {
    // Not valid UTF-8: only its bytes say what it is.
  }
  return `CAST(X'${hex}' AS TEXT)`;
}

/** `INSERT INTO "t"(rowid,"a",…) VALUES(`: the part every row of a table shares. */
export function insertPrefix(table: string, columns: readonly string[]): string {
  return `INSERT INTO ${quoteIdent(table)}(${columns.join(",")}) VALUES(`;
}

/** One row's INSERT from its image (cells joined by U+001F, in `columns` order). */
export function insertLine(prefix: string, image: string): string {
  const values = image === "" ? "" : image.split("\u001f").map(literalFromCell).join(",");
  return `${prefix}${values});\n`;
}

/** An fts5 setting as its own special INSERT (`value` is quote()'s text of it). */
export function fts5SettingLine(table: string, key: string, value: string): string {
  const name = quoteIdent(table);
  return `INSERT INTO ${name}(${name},rank) VALUES(${quoteString(key)},${value});\n`;
}

/** sqlite_sequence as sqlite3 .dump writes it: emptied, then each counter. */
export function sequenceLines(rows: readonly { name: string; seq: string }[]): string {
  if (rows.length === 0) return "";
  const lines = rows.map(
    (row) =>
      `INSERT INTO sqlite_sequence VALUES(${quoteString(row.name)},${literalFromCell(row.seq)});`,
  );
  return `DELETE FROM sqlite_sequence;\n${lines.join("\n")}\n`;
}

/** A stored CREATE statement as a line of the dump. */
export function statementLine(sql: string): string {
  return `${sql.trimEnd().replace(/;$/, "")};\n`;
}

export interface DumpHead {
  cluster: string;
  lsn: number;
  rows: number;
  tables: number;
  takenAt: Date;
}

/** Comments naming the snapshot, then the dump's own PRAGMA and BEGIN, as sqlite3 writes them. */
export function dumpHeader(head: DumpHead): string {
  return [
    `-- dosqlite-cluster export of cluster ${quoteString(head.cluster)}`,
    `-- snapshot-lsn: ${head.lsn}`,
    `-- rows: ${head.rows} in ${head.tables} tables`,
    `-- exported-at: ${head.takenAt.toISOString()}`,
    "PRAGMA foreign_keys=OFF;",
    "BEGIN TRANSACTION;",
    "",
  ].join("\n");
}

export const DUMP_FOOTER = "COMMIT;\n";

export function progressLine(done: number, total: number): string {
  return `-- progress: ${done} of ${total} rows\n`;
}

/** Written in place of the rest when the export fails: without COMMIT, sqlite3 loads none of it. */
export function failureLine(message: string): string {
  return `-- export failed: ${message.replace(/\s+/g, " ")}; this dump is incomplete and has no COMMIT\n`;
}
