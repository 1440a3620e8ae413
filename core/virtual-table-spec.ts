/**
 * Which virtual tables replication can carry, asked of SQLite where it can
 * tell. The module a CREATE VIRTUAL TABLE names is read from the statement as
 * SQLite's grammar reads it (`CREATE VIRTUAL TABLE [IF NOT EXISTS] [schema.]name
 * USING module`), with SQLite's own tokens, so a quoted name holding
 * "using fts5" is a name. Whether an fts5 table keeps its own copy of its rows
 * is read from what fts5 created, not from its arguments (whose option names
 * fts5 matches by prefix: `c=t` is `content=t`): it keeps them exactly when its
 * `<name>_content` shadow table holds every column. Contentless and
 * external-content tables do not, and a rebuilt replica could not make the
 * same index from what it is sent.
 */
import { tokenize } from "./sql-lexer";

/** The module name as SQLite looks it up (case-insensitive), or null if the text is not one. */
export function virtualTableModule(sql: string): string | null {
  let tokens: ReturnType<typeof tokenize>;
  try {
    tokens = tokenize(sql);
  } catch {
    return null;
  }
  const word = (i: number) => {
    const token = tokens[i];
    return token?.type === "word" ? token.value.toUpperCase() : undefined;
  };
  const isName = (i: number) => {
    const type = tokens[i]?.type;
    return type === "word" || type === "quoted-ident" || type === "string";
  };
  if (word(0) !== "CREATE" || word(1) !== "VIRTUAL" || word(2) !== "TABLE") return null;
  let at = 3;
  if (word(3) === "IF" && word(4) === "NOT" && word(5) === "EXISTS") at = 6;
  if (!isName(at)) return null;
  at++;
  if (tokens[at]?.type === "punct" && tokens[at]?.text === ".") {
    if (!isName(at + 1)) return null;
    at += 2;
  }
  if (word(at) !== "USING" || !isName(at + 1)) return null;
  return tokens[at + 1]?.value.toLowerCase() ?? null;
}

/** The columns an fts5 table's `_content` shadow table has when it stores every column. */
export function fts5ContentColumns(columnCount: number): string[] {
  return Array.from({ length: columnCount }, (_, i) => `c${i}`);
}

export function fts5ContentTable(name: string): string {
  return `${name}_content`;
}
