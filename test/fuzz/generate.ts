/**
 * Adversarial SQL for the guard's differential fuzz test: statements built
 * from fragments that broke text-reading guards before (every variable form,
 * TCL variables swallowing quotes and semicolons, comments, every quoting of
 * a name, internal names, pragma functions, date functions with computed
 * 'now', defaults, triggers), on the fuzz cluster's user tables. Seeded.
 */
import type { Rng } from "../../core/message-faults";
import { tokenize } from "../../core/sql-lexer";
import { parameterNumbers } from "../../core/sql-params";

export interface FuzzCase {
  route: "exec" | "query";
  sql: string;
  params: unknown[];
  /** For queries: the node to pin the read to. */
  replica: string;
}

/** The fuzz cluster's user tables, created before the run. */
export const FUZZ_SCHEMA = [
  "CREATE TABLE t (id INTEGER PRIMARY KEY, a, b TEXT, c DEFAULT (julianday('n'||'ow')), k, v)",
  "CREATE TABLE u (k TEXT PRIMARY KEY DEFAULT (hex(randomblob(8))), a, b, v) WITHOUT ROWID",
  "CREATE TABLE log (id INTEGER PRIMARY KEY, a, b, at)",
  "CREATE TRIGGER t_log AFTER INSERT ON t BEGIN INSERT INTO log (a, at) VALUES (NEW.a, datetime('now')); END",
];

export const FUZZ_TABLES = ["t", "u", "log"];

const INTERNAL = ["_repl_changes", "_repl_applying", "_cf_KV", "_cf_METADATA", "_repl_log"];

function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)] as T;
}

function spell(rng: Rng, name: string): string {
  return pick(rng, [
    name,
    `"${name}"`,
    `[${name}]`,
    `\`${name}\``,
    `'${name}'`,
    `main.${name}`,
    `main . /* x */ ${name}`,
    name.toUpperCase(),
  ]);
}

function variable(rng: Rng): string {
  const sigil = pick(rng, ["$", ":", "@", "#"]);
  return pick(rng, [
    "?",
    "?1",
    `${sigil}p`,
    `${sigil}p(')`,
    `${sigil}p(;)`,
    `${sigil}p(--)`,
    `${sigil}p(/*)`,
    `${sigil}p::q`,
    `${sigil}p("x")`,
  ]);
}

function comment(rng: Rng): string {
  return pick(rng, ["", " ", " /* ; */ ", " -- ;\n", " /* ' */ ", "\n", " /*/ */ "]);
}

function value(rng: Rng): string {
  return pick(rng, [
    "1",
    "'x'",
    "NULL",
    "random()",
    "randomblob(4)",
    "julianday('n'||'ow')",
    "unixepoch(('now'),'subsec')",
    "julianday(trim(' now '))",
    "datetime(b)",
    "changes()",
    "last_insert_rowid()",
    "(SELECT count(*) FROM pragma_table_list)",
    "(SELECT count(*) FROM sqlite_master)",
    "9223372036854775807",
    "-0.0",
    "X'FF00'",
    "CAST(X'FF' AS TEXT)",
    variable(rng),
    `(SELECT count(*) FROM ${spell(rng, pick(rng, INTERNAL))})`,
  ]);
}

function table(rng: Rng): string {
  return rng() < 0.8 ? spell(rng, pick(rng, FUZZ_TABLES)) : spell(rng, pick(rng, INTERNAL));
}

/** A TCL variable whose parenthesis hides the rest of a statement from a naive reader. */
function smuggle(rng: Rng): string {
  const hidden = pick(rng, [
    `') UNION ALL SELECT 1 FROM ${pick(rng, INTERNAL)} --'`,
    "') ; DELETE FROM t --'",
    `')) DELETE FROM t WHERE 1 --'`,
    "';'",
  ]);
  return `${pick(rng, ["$", ":", "@", "#"])}a(${hidden.replaceAll(" ", "")}`;
}

function statement(rng: Rng): string {
  const c = () => comment(rng);
  const t = table(rng);
  switch (Math.floor(rng() * 9)) {
    case 0:
      return `SELECT a${c()}FROM ${t}${c()}WHERE a = ${value(rng)}`;
    case 1:
      return `INSERT INTO ${t} (a, b) VALUES (${value(rng)},${c()}${value(rng)})`;
    case 2:
      return `UPDATE ${t} SET b = ${value(rng)}${c()}WHERE id = ${value(rng)}`;
    case 3:
      return `DELETE FROM ${t} WHERE a = ${value(rng)}`;
    case 4:
      return `WITH x AS (SELECT ${smuggle(rng)})${c()}${pick(rng, ["SELECT * FROM x", "INSERT INTO t (a) SELECT 1 FROM x", "DELETE FROM t WHERE a = 1"])}`;
    case 5:
      return `SELECT a FROM t WHERE a = ${smuggle(rng)}${c()}UNION ALL SELECT 1 FROM ${t}`;
    case 6:
      return `INSERT INTO u (k, v) VALUES (${value(rng)}, ${value(rng)}) ON CONFLICT(k) DO UPDATE SET v = ${value(rng)}`;
    case 7: {
      // A tail of comments alone is no statement to SQLite; the oracle cannot
      // tell it from one (workerd refuses both when parameters come first).
      const tail = pick(rng, ["", "DELETE FROM t", "SELECT 1"]);
      return `SELECT ${value(rng)}${c()};${tail === "" ? "" : `${c()}${tail}`}`;
    }
    default:
      return `INSERT INTO t (a) SELECT ${value(rng)} FROM ${t} LIMIT 2`;
  }
}

/** How many parameters the statement takes, as SQLite numbers them (or a guess). */
function parameterCount(sql: string, rng: Rng): number {
  try {
    return Math.max(0, ...parameterNumbers(tokenize(sql)).values());
  } catch {
    return Math.floor(rng() * 3);
  }
}

export function fuzzCase(rng: Rng): FuzzCase {
  const sql = statement(rng);
  // Mostly the right count, so most statements reach SQLite; sometimes not.
  const count = rng() < 0.85 ? parameterCount(sql, rng) : Math.floor(rng() * 3);
  const params = Array.from({ length: count }, () => pick(rng, [0, 1, "x", null]));
  return {
    route: rng() < 0.5 ? "exec" : "query",
    sql,
    params,
    replica: pick(rng, ["master", "replica-1", "replica-2", "replica-3", "replica-4"]),
  };
}
