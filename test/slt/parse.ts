/**
 * A parser for sqllogictest scripts, following the reference runner's reading
 * rules (sqllogictest.c): `#` lines are dropped wherever they are, a line of
 * spaces is blank, a blank line ends a record, and only the first four
 * whitespace-separated tokens of a record's command line count.
 */

export type ColumnType = "T" | "I" | "R";
export type SortMode = "nosort" | "rowsort" | "valuesort";

/** `skipif <engine>` or `onlyif <engine>` before a record. */
export interface Condition {
  readonly kind: "skipif" | "onlyif";
  readonly engine: string;
}

interface RecordBase {
  /** 1-based line of the record's command (after its conditions). */
  readonly line: number;
  readonly conditions: readonly Condition[];
}

export interface StatementRecord extends RecordBase {
  readonly kind: "statement";
  readonly expect: "ok" | "error";
  readonly sql: string;
}

export interface QueryRecord extends RecordBase {
  readonly kind: "query";
  readonly types: readonly ColumnType[];
  readonly sort: SortMode;
  readonly label: string | undefined;
  readonly sql: string;
  /** The lines after `----`: one value per line, or one "N values hashing to <md5>" line. */
  readonly expected: readonly string[];
}

export interface HashThresholdRecord extends RecordBase {
  readonly kind: "hash-threshold";
  readonly threshold: number;
}

export interface HaltRecord extends RecordBase {
  readonly kind: "halt";
}

/** A record the reference runner reports as an error; it stops at unknown record types. */
export interface InvalidRecord extends RecordBase {
  readonly kind: "invalid";
  readonly reason: string;
  readonly stops: boolean;
}

export type SltRecord =
  | StatementRecord
  | QueryRecord
  | HashThresholdRecord
  | HaltRecord
  | InvalidRecord;

interface Line {
  readonly number: number;
  readonly text: string;
}

/**
 * The reference keeps a label to 20 characters when it files it, so two
 * labels that agree that far are one label.
 */
const LABEL_CHARS = 20;

const SORT_MODES: ReadonlySet<string> = new Set(["nosort", "rowsort", "valuesort"]);

/** Lines without comments, with `\r` and all-space lines made empty, as `nextLine` does. */
function scriptLines(text: string): Line[] {
  const lines: Line[] = [];
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const blankOrText = line.trim() === "" ? "" : line;
    if (blankOrText.startsWith("#")) continue;
    lines.push({ number: i + 1, text: blankOrText });
  }
  return lines;
}

/** Groups of consecutive non-blank lines. */
function recordBlocks(lines: readonly Line[]): Line[][] {
  const blocks: Line[][] = [];
  let current: Line[] = [];
  for (const line of lines) {
    if (line.text === "") {
      if (current.length > 0) blocks.push(current);
      current = [];
    } else {
      current.push(line);
    }
  }
  if (current.length > 0) blocks.push(current);
  return blocks;
}

/** The first four tokens of a command line, "" for missing ones. */
function tokens(text: string): [string, string, string, string] {
  const found = text.trim().split(/\s+/);
  return [found[0] ?? "", found[1] ?? "", found[2] ?? "", found[3] ?? ""];
}

function parseQuery(
  words: readonly string[],
  body: readonly Line[],
  base: RecordBase,
): QueryRecord | InvalidRecord {
  const [, typeString = "", sortWord = "", label = ""] = words;
  if (typeString === "") {
    return { ...base, kind: "invalid", reason: "missing type string", stops: true };
  }
  if (!/^[TIR]+$/.test(typeString)) {
    return {
      ...base,
      kind: "invalid",
      reason: `unknown type character in '${typeString}'`,
      stops: false,
    };
  }
  const sort = sortWord === "" ? "nosort" : sortWord;
  if (!SORT_MODES.has(sort)) {
    return { ...base, kind: "invalid", reason: `unknown sort method '${sort}'`, stops: false };
  }
  const separator = body.findIndex((line) => line.text === "----");
  const sqlLines = separator < 0 ? body : body.slice(0, separator);
  // Without a ---- line the reference compares the result with nothing, so only
  // an empty result passes: no expected lines says the same.
  const expected = separator < 0 ? [] : body.slice(separator + 1).map((line) => line.text);
  return {
    ...base,
    kind: "query",
    types: [...typeString] as ColumnType[],
    sort: sort as SortMode,
    label: label === "" ? undefined : label.slice(0, LABEL_CHARS),
    sql: sqlLines.map((line) => line.text).join("\n"),
    expected,
  };
}

function parseBlock(block: readonly Line[]): SltRecord {
  const conditions: Condition[] = [];
  let at = 0;
  let words = tokens(block[0]?.text ?? "");
  while (words[0] === "skipif" || words[0] === "onlyif") {
    conditions.push({ kind: words[0], engine: words[1] });
    at++;
    words = tokens(block[at]?.text ?? "");
  }
  const base: RecordBase = { line: block[at]?.number ?? block[0]?.number ?? 0, conditions };
  const body = block.slice(at + 1);
  switch (words[0]) {
    case "statement": {
      const sql = body.map((line) => line.text).join("\n");
      if (words[1] === "ok" || words[1] === "error") {
        return { ...base, kind: "statement", expect: words[1], sql };
      }
      return {
        ...base,
        kind: "invalid",
        reason: "statement argument should be 'ok' or 'error'",
        stops: false,
      };
    }
    case "query":
      return parseQuery(words, body, base);
    case "hash-threshold":
      // atoi: leading digits, 0 when there are none (and 0 turns hashing off).
      return { ...base, kind: "hash-threshold", threshold: Number.parseInt(words[1], 10) || 0 };
    case "halt":
      return { ...base, kind: "halt" };
    default:
      return {
        ...base,
        kind: "invalid",
        reason: `unknown record type '${words[0]}'`,
        stops: true,
      };
  }
}

/** Every record of a script, in order. Never throws: malformed records come back as "invalid". */
export function parseScript(text: string): SltRecord[] {
  return recordBlocks(scriptLines(text)).map(parseBlock);
}
