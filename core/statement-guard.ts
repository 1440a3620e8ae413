/**
 * Checks and rewrites client SQL before it reaches SQLite.
 *
 * Replication is statement-based: the master executes a write and logs its SQL,
 * and every replica replays that SQL. So a logged statement must compute the
 * same result on every node. Like rqlite, the guard rewrites the common
 * non-deterministic constructs (random(), 'now', CURRENT_TIMESTAMP...) into
 * literals drawn once on the master, and refuses those it cannot rewrite.
 *
 * It works on tokens, not a parse tree: edits are spliced in by token offsets
 * so the rest of the text, bound `?` positions included, stays byte-for-byte.
 */
import { ApiError } from "./errors";
import type { SqlValue, Statement } from "./protocol";
import { type Token, tokenize } from "./sql-lexer";

export type StatementKind = "read" | "write" | "ddl";

export interface GuardContext {
  /** Master clock (ms since epoch) for the statement's 'now'. */
  now: number;
  randomInt64: () => bigint;
  randomBytes: (n: number) => Uint8Array;
}

export interface GuardedStatement {
  /** The SQL to execute and log: rewritten, trailing `;` removed. */
  sql: string;
  params: SqlValue[];
  kind: StatementKind;
  /** True when a non-deterministic construct was replaced by a literal. */
  rewritten: boolean;
}

/**
 * This project's tables, Cloudflare's, and the one the local runtime (Miniflare) adds to
 * every Durable Object to remember its name.
 */
export const RESERVED_PREFIXES: readonly string[] = ["_repl_", "_cf_", "__miniflare_"];

/** SQLite's own tables: readable (sqlite_master), never writable. */
const WRITE_RESERVED_PREFIXES: readonly string[] = [...RESERVED_PREFIXES, "sqlite_"];

export function isReservedName(name: string, forWrite: boolean): boolean {
  const lower = name.toLowerCase();
  const prefixes = forWrite ? WRITE_RESERVED_PREFIXES : RESERVED_PREFIXES;
  return prefixes.some((prefix) => lower.startsWith(prefix));
}

// ---------------------------------------------------------------------------
// Token helpers

/** A set from a space-separated list: keeps long keyword lists on a few lines. */
function words(list: string): ReadonlySet<string> {
  return new Set(list.split(" "));
}

function upper(token: Token | undefined): string | undefined {
  return token?.type === "word" ? token.value.toUpperCase() : undefined;
}

function isPunct(token: Token | undefined, text: string): boolean {
  return token?.type === "punct" && token.text === text;
}

/** Words after which `name(` is a table with a column list, not a function call. */
const NOT_CALL_AFTER = words("INTO TABLE EXISTS REFERENCES VIEW INDEX TRIGGER JOIN");

/**
 * `name (` is a call. Quoted names count too: SQLite calls random() for
 * "random"() as well. A name after `.` or after INTO/TABLE... is a table.
 */
function isCall(tokens: readonly Token[], i: number): boolean {
  const token = tokens[i];
  if (token?.type !== "word" && token?.type !== "quoted-ident") return false;
  if (!isPunct(tokens[i + 1], "(")) return false;
  const prev = tokens[i - 1];
  if (isPunct(prev, ".")) return false;
  const prevWord = upper(prev);
  return prevWord === undefined || !NOT_CALL_AFTER.has(prevWord);
}

interface Argument {
  /** Token indexes, inclusive; first > last for an empty argument. */
  first: number;
  last: number;
}

interface CallArgs {
  args: Argument[];
  /** Index of the closing `)`. */
  close: number;
}

/** Splits `name ( a, b )` at top-level commas; null when the parens never close. */
function callArgs(tokens: readonly Token[], nameIndex: number): CallArgs | null {
  const open = nameIndex + 1;
  const args: Argument[] = [];
  let depth = 0;
  let first = open + 1;
  for (let i = first; i < tokens.length; i++) {
    const token = tokens[i];
    if (isPunct(token, "(")) depth++;
    else if (isPunct(token, ")") && depth > 0) depth--;
    else if (isPunct(token, ")")) {
      if (i > open + 1 || args.length > 0) args.push({ first, last: i - 1 });
      return { args, close: i };
    } else if (isPunct(token, ",") && depth === 0) {
      args.push({ first, last: i - 1 });
      first = i + 1;
    }
  }
  return null;
}

function singleToken(tokens: readonly Token[], arg: Argument): Token | undefined {
  return arg.first === arg.last ? tokens[arg.first] : undefined;
}

// ---------------------------------------------------------------------------
// Rule 1: one statement

interface SingleStatement {
  tokens: Token[];
  /** Where the statement's text ends: at its `;`, or the end of the string. */
  end: number;
  hadSemicolon: boolean;
}

function isCreateTrigger(tokens: readonly Token[]): boolean {
  const [first, second, third] = tokens.slice(0, 3).map(upper);
  if (first !== "CREATE") return false;
  return (
    second === "TRIGGER" || ((second === "TEMP" || second === "TEMPORARY") && third === "TRIGGER")
  );
}

/**
 * A CREATE TRIGGER body holds `;`-terminated statements up to its END, so the
 * statement's own `;` can only come after that END. CASE ... END pairs in the
 * body do not close it. Returns where to look for the `;`: 0 for other statements.
 */
function triggerEnd(tokens: readonly Token[]): number {
  if (!isCreateTrigger(tokens)) return 0;
  let openCases = 0;
  for (const [i, token] of tokens.entries()) {
    const word = upper(token);
    if (word === "CASE") openCases++;
    else if (word === "END" && openCases > 0) openCases--;
    else if (word === "END") return i + 1;
  }
  throw new ApiError("INVALID_SQL", "CREATE TRIGGER body has no END");
}

function singleStatement(sql: string): SingleStatement {
  const all = tokenize(sql);
  const from = triggerEnd(all);
  const semicolon = all.findIndex((token, i) => i >= from && token.type === "semicolon");
  if (semicolon >= 0 && semicolon < all.length - 1) {
    throw new ApiError(
      "INVALID_SQL",
      "one statement per entry: send several statements as several entries of one request",
    );
  }
  const tokens = semicolon < 0 ? all : all.slice(0, semicolon);
  if (tokens.length === 0) throw new ApiError("INVALID_SQL", "empty SQL statement");
  const end = all[semicolon]?.start ?? sql.length;
  return { tokens, end, hadSemicolon: semicolon >= 0 };
}

// ---------------------------------------------------------------------------
// Rule 2: statement kind

const READ_FIRST = new Set(["SELECT", "VALUES", "EXPLAIN"]);
const WRITE_FIRST = new Set(["INSERT", "UPDATE", "DELETE", "REPLACE"]);
const DDL_FIRST = new Set(["CREATE", "DROP", "ALTER"]);

const IN_TRANSACTION = "each request is already one transaction";
const NOT_REPLICATED = "only the cluster's one database is replicated";
const MAINTENANCE = "storage maintenance is the service's job and is not replicated";

/** Statements the service refuses, and why, for the error message. */
const REFUSED_STATEMENTS: Readonly<Record<string, string>> = {
  BEGIN: IN_TRANSACTION,
  COMMIT: IN_TRANSACTION,
  END: IN_TRANSACTION,
  ROLLBACK: IN_TRANSACTION,
  SAVEPOINT: IN_TRANSACTION,
  RELEASE: IN_TRANSACTION,
  ATTACH: NOT_REPLICATED,
  DETACH: NOT_REPLICATED,
  PRAGMA: "pragmas change settings outside the replicated log",
  VACUUM: MAINTENANCE,
  ANALYZE: MAINTENANCE,
  REINDEX: MAINTENANCE,
};

/** REPLACE is a write, but replace( is the string function. */
function isWriteWord(tokens: readonly Token[], i: number): boolean {
  const word = upper(tokens[i]);
  if (word === "REPLACE") return !isPunct(tokens[i + 1], "(");
  return word === "INSERT" || word === "UPDATE" || word === "DELETE";
}

function statementKind(tokens: readonly Token[]): StatementKind {
  const first = tokens[0];
  const word = upper(first);
  if (word === undefined) {
    throw new ApiError("INVALID_SQL", `a statement cannot start with ${first?.text ?? "nothing"}`);
  }
  if (READ_FIRST.has(word)) return "read";
  if (WRITE_FIRST.has(word)) return "write";
  if (DDL_FIRST.has(word)) return "ddl";
  if (word === "WITH") {
    return tokens.some((_, i) => isWriteWord(tokens, i)) ? "write" : "read";
  }
  const why = REFUSED_STATEMENTS[word];
  if (why !== undefined) {
    throw new ApiError("INVALID_SQL", `${word} statements are not allowed: ${why}`);
  }
  throw new ApiError(
    "INVALID_SQL",
    `unsupported statement ${word}: expected SELECT, WITH, VALUES, EXPLAIN, INSERT, UPDATE, ` +
      "DELETE, REPLACE, CREATE, DROP or ALTER",
  );
}

// ---------------------------------------------------------------------------
// Rule 3: reserved names

/** SQLite's own functions: their names look reserved but name no table. */
const SQLITE_FUNCTIONS = words(
  "sqlite_offset sqlite_version sqlite_source_id " +
    "sqlite_compileoption_used sqlite_compileoption_get",
);

/**
 * Words after which SQLite reads a 'string' as a table or column name. `IN` is
 * there for `x IN 'table'`, which reads the table's rows; `ADD` for ALTER TABLE.
 */
const NAME_AFTER = words(
  "FROM JOIN INTO TABLE UPDATE INDEX VIEW TRIGGER EXISTS REFERENCES TO COLUMN ON IN ADD",
);

/** `UPDATE OR IGNORE 'table'`: the name follows the conflict clause. */
const CONFLICT_ACTIONS = words("ROLLBACK ABORT REPLACE FAIL IGNORE");

/** Clauses that end a FROM list at their nesting depth. */
const FROM_LIST_END = words(
  "WHERE GROUP HAVING WINDOW ORDER LIMIT UNION INTERSECT EXCEPT RETURNING SELECT VALUES SET DO",
);

/** `IS DISTINCT FROM x` compares; it does not name a table. */
function startsFromList(tokens: readonly Token[], i: number): boolean {
  return upper(tokens[i]) === "FROM" && upper(tokens[i - 1]) !== "DISTINCT";
}

/**
 * Indexes of the tokens where a FROM list may name a table: after FROM, after
 * JOIN, after a comma between tables (`FROM a, b`), and first inside a
 * parenthesised table list, which SQLite also accepts (`FROM (a, b)`).
 */
function tableSlots(tokens: readonly Token[]): Set<number> {
  const slots = new Set<number>();
  const inFrom: boolean[] = [false];
  tokens.forEach((token, i) => {
    const top = inFrom.length - 1;
    const word = upper(token);
    if (isPunct(token, "(")) {
      // `FROM (a, b)` is a list of tables; `FROM (SELECT ...)` turns it off at SELECT.
      const tableList = slots.has(i);
      inFrom.push(tableList);
      if (tableList) slots.add(i + 1);
    } else if (isPunct(token, ")") && top > 0) inFrom.pop();
    else if (startsFromList(tokens, i)) {
      inFrom[top] = true;
      slots.add(i + 1);
    } else if (word === "JOIN") slots.add(i + 1);
    else if (word !== undefined && FROM_LIST_END.has(word)) inFrom[top] = false;
    else if (isPunct(token, ",") && inFrom[top] === true) slots.add(i + 1);
  });
  return slots;
}

function isCreateVirtualTable(tokens: readonly Token[]): boolean {
  return upper(tokens[0]) === "CREATE" && upper(tokens[1]) === "VIRTUAL";
}

/**
 * SQLite accepts a 'string' wherever it expects a name (`FROM '_repl_log'`),
 * so a string in a name position is checked like an identifier. Strings used
 * as values are never names.
 */
function isStringName(tokens: readonly Token[], i: number, slots: Set<number>): boolean {
  if (isPunct(tokens[i - 1], ".") || isPunct(tokens[i + 1], ".")) return true;
  if (slots.has(i)) return true;
  const word = upper(tokens[i - 1]);
  if (word === undefined || word === "FROM") return false;
  if (CONFLICT_ACTIONS.has(word)) {
    return upper(tokens[i - 2]) === "OR" && upper(tokens[i - 3]) === "UPDATE";
  }
  return NAME_AFTER.has(word);
}

function nameAt(
  tokens: readonly Token[],
  i: number,
  slots: Set<number>,
  virtual: boolean,
): string | undefined {
  const token = tokens[i];
  if (token === undefined) return undefined;
  if (token.type === "word") {
    const isSqliteFunction = SQLITE_FUNCTIONS.has(token.value.toLowerCase()) && isCall(tokens, i);
    return isSqliteFunction ? undefined : token.value;
  }
  if (token.type === "quoted-ident") return token.value;
  // A virtual table's arguments are the module's to read: fts5 takes a table name
  // as content='...'. Any string there may be one.
  if (token.type === "string" && (virtual || isStringName(tokens, i, slots))) return token.value;
  return undefined;
}

function reservedName(name: string): ApiError {
  return new ApiError("RESERVED_NAME", `"${name}" is an internal name and cannot be used`, {
    name,
  });
}

function checkReservedNames(tokens: readonly Token[], forWrite: boolean): void {
  const slots = tableSlots(tokens);
  const virtual = isCreateVirtualTable(tokens);
  tokens.forEach((_, i) => {
    const name = nameAt(tokens, i, slots, virtual);
    if (name !== undefined && isReservedName(name, forWrite)) throw reservedName(name);
  });
  if (virtual) {
    // A virtual table keeps its data in shadow tables named `<name>_data`, `<name>_node`...:
    // an fts5 table named _repl would create _repl_data, _repl_config and more.
    const using = tokens.findIndex((token) => upper(token) === "USING");
    const name = using > 0 ? nameAt(tokens, using - 1, slots, false) : undefined;
    if (name !== undefined && isReservedName(`${name}_`, forWrite)) throw reservedName(name);
  }
}

// ---------------------------------------------------------------------------
// Rule 4: determinism

const TIME_FUNCTIONS = words("date time datetime julianday unixepoch strftime timediff");

/** Time functions that mean 'now' when called with no argument. */
const NOW_WITHOUT_ARGUMENT = new Set(["date", "time", "datetime", "julianday", "unixepoch"]);

const CLOCK_KEYWORDS = new Set(["CURRENT_TIMESTAMP", "CURRENT_DATE", "CURRENT_TIME"]);

const MAX_RANDOMBLOB = 65536;

/** Calls that cannot be rewritten, and why, for the error and the docs table. */
const REFUSED_CALLS: Readonly<Record<string, string>> = {
  last_insert_rowid:
    "it reads the connection's history, which replicas do not share: use RETURNING instead",
  changes: "it reads the connection's history, which replicas do not share",
  total_changes: "it reads the connection's history, which replicas do not share",
  sqlite_version: "nodes may run different SQLite builds",
  sqlite_source_id: "nodes may run different SQLite builds",
  sqlite_compileoption_used: "nodes may run different SQLite builds",
  sqlite_compileoption_get: "nodes may run different SQLite builds",
  load_extension: "extensions are not available, and could differ from node to node",
};

/** These take no argument; `changes(a)` is a table named changes, not a call. */
const ZERO_ARGUMENT_CALLS = words(
  "last_insert_rowid changes total_changes sqlite_version sqlite_source_id",
);

const IN_DDL_WHY =
  "a DEFAULT, trigger or generated column is evaluated on each node separately, " +
  "so no literal drawn now can stand in for it";

export const NON_DETERMINISTIC_RULES: ReadonlyArray<{
  construct: string;
  handling: "rewritten" | "refused";
  why: string;
}> = [
  {
    construct: "random()",
    handling: "rewritten",
    why:
      "replaced by a signed 64-bit integer literal drawn on the master; each call in the text " +
      "gets its own value, but all rows a statement touches share it",
  },
  {
    construct: `randomblob(N), N an integer literal from 1 to ${MAX_RANDOMBLOB}`,
    handling: "rewritten",
    why: "replaced by an X'...' literal of N random bytes drawn on the master",
  },
  {
    construct: "randomblob(expr)",
    handling: "refused",
    why: "the length is only known while the statement runs, so the bytes cannot be drawn first",
  },
  {
    construct:
      "'now' in date(), time(), datetime(), julianday(), unixepoch(), strftime(), timediff()",
    handling: "rewritten",
    why: "replaced by the master's clock as a 'YYYY-MM-DD HH:MM:SS.SSS' UTC literal",
  },
  {
    construct: "date(), time(), datetime(), julianday(), unixepoch() and strftime(format)",
    handling: "rewritten",
    why: "with no time argument they mean 'now': the master's clock literal is added as one",
  },
  {
    construct: "a bound parameter equal to 'now' as a time function argument",
    handling: "refused",
    why: "bound values are replayed as sent, so pass the time itself instead of 'now'",
  },
  {
    construct: "CURRENT_TIMESTAMP, CURRENT_DATE, CURRENT_TIME",
    handling: "rewritten",
    why: "replaced by the master's clock as a UTC string literal",
  },
  {
    construct: "any of the rewritten constructs above in CREATE, DROP or ALTER",
    handling: "refused",
    why: IN_DDL_WHY,
  },
  ...Object.entries(REFUSED_CALLS).map(([name, why]) => ({
    construct: `${name}()`,
    handling: "refused" as const,
    why,
  })),
];

function nonDeterministic(construct: string, why: string): ApiError {
  return new ApiError(
    "NON_DETERMINISTIC",
    `${construct} is not allowed: ${why}; replicas replay the statement and must compute ` +
      "the same result",
    { construct },
  );
}

interface Edit {
  start: number;
  end: number;
  text: string;
}

interface ClockLiterals {
  full: string;
  timestamp: string;
  date: string;
  time: string;
}

/** The master's clock as SQLite prints it, in UTC, each already quoted. */
function clockLiterals(now: number): ClockLiterals {
  const iso = new Date(now).toISOString(); // 2026-01-02T03:04:05.678Z
  const date = iso.slice(0, 10);
  return {
    full: `'${date} ${iso.slice(11, 23)}'`,
    timestamp: `'${date} ${iso.slice(11, 19)}'`,
    date: `'${date}'`,
    time: `'${iso.slice(11, 19)}'`,
  };
}

function isNow(value: string): boolean {
  return value.trim().toLowerCase() === "now";
}

/**
 * 1-based parameter numbers as SQLite assigns them: `?` takes the next number,
 * `?NNN` takes NNN, and a repeated `:name` reuses the number of its first use.
 */
function parameterNumbers(tokens: readonly Token[]): Map<number, number> {
  const numbers = new Map<number, number>();
  const named = new Map<string, number>();
  let highest = 0;
  tokens.forEach((token, i) => {
    if (token.type !== "param") return;
    let number = named.get(token.text);
    if (number === undefined) {
      const explicit = /^\?\d+$/.test(token.text) ? Number(token.text.slice(1)) : 0;
      number = explicit > 0 ? explicit : highest + 1;
      if (token.text !== "?") named.set(token.text, number);
    }
    highest = Math.max(highest, number);
    numbers.set(i, number);
  });
  return numbers;
}

/** Collects the edits for one statement; in DDL any edit is a refusal instead. */
class Rewriter {
  readonly edits: Edit[] = [];
  private readonly clock: ClockLiterals;
  private readonly paramNumbers: Map<number, number>;

  constructor(
    private readonly sql: string,
    private readonly tokens: readonly Token[],
    private readonly params: readonly SqlValue[],
    private readonly ctx: GuardContext,
    private readonly kind: StatementKind,
  ) {
    this.clock = clockLiterals(ctx.now);
    this.paramNumbers = parameterNumbers(tokens);
  }

  run(): Edit[] {
    this.tokens.forEach((token, i) => {
      const keyword = upper(token);
      if (keyword !== undefined && CLOCK_KEYWORDS.has(keyword)) this.clockKeyword(token, keyword);
      else if (isCall(this.tokens, i)) this.call(i, token.value.toLowerCase());
    });
    // A strftime() argument is appended after the calls nested in it were visited.
    return this.edits.sort((a, b) => a.start - b.start);
  }

  /** `make` runs only when the edit is allowed, so DDL draws no randomness. */
  private edit(construct: string, start: number, end: number, make: () => string): void {
    if (this.kind === "ddl") {
      throw new ApiError(
        "NON_DETERMINISTIC",
        `${construct} is not allowed in CREATE, DROP or ALTER statements: ${IN_DDL_WHY}`,
        { construct },
      );
    }
    this.edits.push({ start, end, text: make() });
  }

  private clockKeyword(token: Token, keyword: string): void {
    const text =
      keyword === "CURRENT_DATE"
        ? this.clock.date
        : keyword === "CURRENT_TIME"
          ? this.clock.time
          : this.clock.timestamp;
    this.edit(keyword, token.start, token.end, () => text);
  }

  private call(i: number, name: string): void {
    const why = REFUSED_CALLS[name];
    if (why !== undefined) {
      const zeroArguments = ZERO_ARGUMENT_CALLS.has(name);
      if (!zeroArguments || isPunct(this.tokens[i + 2], ")")) {
        throw nonDeterministic(`${name}()`, why);
      }
      return;
    }
    const args = callArgs(this.tokens, i);
    if (args === null) return; // unbalanced: SQLite rejects it
    if (name === "random") this.random(i, args);
    else if (name === "randomblob") this.randomblob(i, args);
    else if (TIME_FUNCTIONS.has(name)) this.timeCall(i, name, args);
  }

  private span(i: number, args: CallArgs): { start: number; end: number } {
    return { start: this.tokens[i]?.start ?? 0, end: this.tokens[args.close]?.end ?? 0 };
  }

  private random(i: number, args: CallArgs): void {
    if (args.args.length > 0) return; // random(x) is an error in SQLite itself
    const { start, end } = this.span(i, args);
    this.edit("random()", start, end, () => {
      const value = this.ctx.randomInt64();
      // Parenthesised, `x-random()` would otherwise become `x--42`: a comment.
      if (value < 0n) return `(${value})`;
      // `random()AS x` must not become `42AS x`, which SQLite cannot read.
      return /[A-Za-z0-9_$\u0080-\uffff]/.test(this.sql.charAt(end)) ? `${value} ` : `${value}`;
    });
  }

  private randomblob(i: number, args: CallArgs): void {
    const only = args.args.length === 1 ? args.args[0] : undefined;
    const size = only === undefined ? undefined : integerLiteral(this.tokens, only);
    if (size === undefined || size < 1 || size > MAX_RANDOMBLOB) {
      const why = `only an integer literal N from 1 to ${MAX_RANDOMBLOB} can be rewritten`;
      throw nonDeterministic("randomblob(expr)", why);
    }
    const { start, end } = this.span(i, args);
    this.edit("randomblob(N)", start, end, () => `X'${toHex(this.ctx.randomBytes(size))}'`);
  }

  private timeCall(i: number, name: string, call: CallArgs): void {
    // strftime's first argument is its format, not a time: strftime('now') prints "now".
    const timeArgs = name === "strftime" ? call.args.slice(1) : call.args;
    for (const arg of timeArgs) this.timeArgument(name, arg);
    const open = this.tokens[i + 1];
    if (call.args.length === 0 && NOW_WITHOUT_ARGUMENT.has(name) && open !== undefined) {
      this.edit(`${name}()`, open.end, open.end, () => this.clock.full);
    }
    const format = call.args[0];
    const formatEnd = format === undefined ? undefined : this.tokens[format.last]?.end;
    if (name === "strftime" && call.args.length === 1 && formatEnd !== undefined) {
      this.edit("strftime(format)", formatEnd, formatEnd, () => `, ${this.clock.full}`);
    }
  }

  private timeArgument(name: string, arg: Argument): void {
    const token = singleToken(this.tokens, arg);
    if (token?.type === "string" && isNow(token.value)) {
      this.edit(`${name}('now')`, token.start, token.end, () => this.clock.full);
    } else if (token?.type === "param") {
      const number = this.paramNumbers.get(arg.first) ?? 0;
      const value = this.params[number - 1];
      if (typeof value === "string" && isNow(value)) {
        const construct = `${name}(${token.text}) with ${token.text} bound to 'now'`;
        throw nonDeterministic(construct, "pass the time itself instead of 'now'");
      }
    }
  }
}

/** A positive decimal or hex integer literal, or undefined. */
function integerLiteral(tokens: readonly Token[], arg: Argument): number | undefined {
  const token = singleToken(tokens, arg);
  if (token?.type !== "number") return undefined;
  const digits = token.text.replaceAll("_", "");
  if (!/^(\d+|0[xX][0-9A-Fa-f]+)$/.test(digits)) return undefined;
  return Number(digits);
}

function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0"))
    .join("")
    .toUpperCase();
}

function splice(sql: string, edits: readonly Edit[], end: number): string {
  let out = "";
  let cursor = 0;
  for (const edit of edits) {
    out += sql.slice(cursor, edit.start) + edit.text;
    cursor = edit.end;
  }
  return out + sql.slice(cursor, end);
}

// ---------------------------------------------------------------------------
// Entry points

/**
 * Checks one statement of a write request and returns the SQL to execute and
 * log. Throws ApiError INVALID_SQL, RESERVED_NAME or NON_DETERMINISTIC.
 */
export function guardWrite(stmt: Statement, ctx: GuardContext): GuardedStatement {
  const { tokens, end, hadSemicolon } = singleStatement(stmt.sql);
  const kind = statementKind(tokens);
  checkReservedNames(tokens, true);
  const edits = new Rewriter(stmt.sql, tokens, stmt.params, ctx, kind).run();
  const spliced = splice(stmt.sql, edits, end);
  // Only the `;` and the blanks or comments around it go: nothing follows them.
  const sql = hadSemicolon ? spliced.trimEnd() : spliced;
  return { sql, params: stmt.params, kind, rewritten: edits.length > 0 };
}

const QUERY_FIRST = new Set(["SELECT", "WITH", "VALUES", "EXPLAIN"]);

/** Words that only appear in statements that change something. */
const NOT_IN_QUERY = words(
  "INSERT UPDATE DELETE CREATE DROP ALTER ATTACH DETACH PRAGMA VACUUM REINDEX ANALYZE " +
    "BEGIN COMMIT ROLLBACK SAVEPOINT RELEASE",
);

function readsOnly(found: string): ApiError {
  return new ApiError(
    "INVALID_SQL",
    `query accepts only reads (SELECT, WITH, VALUES, EXPLAIN), found ${found}: send writes to exec`,
  );
}

/** Checks the SQL of a read-only query. Throws ApiError INVALID_SQL or RESERVED_NAME. */
export function guardRead(sql: string): void {
  const { tokens } = singleStatement(sql);
  const first = upper(tokens[0]);
  if (first === undefined || !QUERY_FIRST.has(first)) {
    throw readsOnly(first ?? tokens[0]?.text ?? "nothing");
  }
  tokens.forEach((token, i) => {
    const word = upper(token);
    if (word === undefined) return;
    if (NOT_IN_QUERY.has(word) || (word === "REPLACE" && !isPunct(tokens[i + 1], "("))) {
      throw readsOnly(word);
    }
  });
  checkReservedNames(tokens, false);
}
