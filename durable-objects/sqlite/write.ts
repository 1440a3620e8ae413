/**
 * Running one client statement of a write request on the master, inside the
 * commit's transaction: the guard on SQLite's compiled program, the statement,
 * and the log entry that says what it did.
 */
import { toApiValue } from "../../core/api-values";
import {
  afterStatement,
  type ConnectionCounters,
  freshCounters,
} from "../../core/connection-counters";
import { ApiError } from "../../core/errors";
import type { LogEntry, ResultFormat, Statement, StatementResult } from "../../core/protocol";
import type { RecordBudget } from "../../core/record-budget";
import { isReservedName } from "../../core/reserved-names";
import { rowsTooWideToMove } from "../../core/row-apply";
import { type Change, effectsHash, statementEffects } from "../../core/row-capture";
import {
  changedTables,
  checkSchemaChange,
  createdTables,
  diffSchema,
} from "../../core/schema-change";
import { imageSqlColumns, isCapturedTable, keySqlColumns } from "../../core/schema-info";
import { quoteIdent } from "../../core/sql-lexer";
import { type BoundBody, bindBody, encodeBindable, guardedStatement } from "../../core/sql-params";
import { checkReplayable, checkTouched, classifyWrite, isReplayable } from "../../core/sql-policy";
import {
  explained,
  isCreateTrigger,
  type SingleStatement,
  singleStatement,
  upper,
} from "../../core/sql-statement";
import { rowSql } from "../../core/sql-value";
import { guardTrigger } from "../../core/trigger-guard";
import {
  countThenTake,
  dropCaptureTriggers,
  syncCaptureTriggers,
  takeChanges,
  takeWithCounts,
} from "./capture";
import { compile } from "./compile";
import { insertedAtMaxRowid, refuseRandomRowids } from "./random-rowids";
import {
  asObjects,
  type ExactRows,
  type ResultBudget,
  readExact,
  readReturning,
  readRuntime,
} from "./read";
import { planReturning, type ReturningPlan } from "./returning-plan";
import { eachRowToEnd } from "./run";
import type { SqlNode } from "./schema";

export interface WriteOutcome {
  entry: LogEntry | null;
  result: StatementResult;
  /** The statement wrote sqlite_sequence (AUTOINCREMENT): the record carries it. */
  wroteSequence: boolean;
}

/**
 * Prepares a client statement: one statement, triggers guarded, parameters
 * bound, calls of the connection counters' functions bound to `counters`.
 */
export function prepare(
  text: string,
  params: Statement["params"],
  counters?: ConnectionCounters,
): BoundBody {
  let statement: SingleStatement = singleStatement(text);
  if (statement.syntax === "ddl") {
    checkNamesInDdl(statement);
    if (isCreateTrigger(statement.tokens)) statement = singleStatement(guardTrigger(statement));
  }
  return bindBody(statement, params, counters);
}

/** The connection's last_insert_rowid(), to tell whether the next INSERT set it. */
function connectionRowid(node: SqlNode): string {
  const row = node.sql.exec<{ r: string }>("SELECT CAST(last_insert_rowid() AS TEXT) AS r").one();
  return String(row.r);
}

/**
 * DDL is stored as text and read later (a view's query, a trigger's body, an
 * fts5 table's content=): an internal name in it would only be met when it
 * runs, so any word, name or string naming one is refused up front.
 */
function checkNamesInDdl(statement: SingleStatement): void {
  for (const token of statement.tokens) {
    const named = token.type === "word" || token.type === "quoted-ident" || token.type === "string";
    if (named && isReservedName(token.value)) {
      throw new ApiError(
        "RESERVED_NAME",
        `"${token.value}" is an internal name and cannot be used`,
        {
          name: token.value,
        },
      );
    }
  }
}

function result(
  base: Pick<StatementResult, "rowsWritten" | "lastRowId">,
  rows: ExactRows | null,
  format: ResultFormat,
): StatementResult {
  const out: StatementResult = { ...base };
  if (rows === null) return out;
  // Arrays name their columns even with no rows (a client types them by name).
  if (format === "arrays") {
    out.columns = rows.columns;
    out.rows = rows.rows;
  } else if (rows.rows.length > 0) out.rows = asObjects(rows);
  return out;
}

export interface WriteLimits {
  /** A replayable write changing at least this many rows ships as its statement; 0: never. */
  statementMinRows: number;
  /** What the request's log record may still hold. */
  record: RecordBudget;
}

/**
 * Runs one statement of a write request; throws ApiError to refuse it (the
 * caller rolls back). `counters` are the client's connection counters: its
 * SQL reads them, and they are moved on by what the statement did.
 */
export function runWrite(
  node: SqlNode,
  statement: Statement,
  budget: ResultBudget,
  format: ResultFormat,
  limits: WriteLimits,
  counters: ConnectionCounters = freshCounters(),
): WriteOutcome {
  const { statementMinRows, record } = limits;
  const prepared = prepare(statement.sql, statement.params, counters);
  const explains = prepared.statement.syntax === "explain";
  const returning = planReturning(node, prepared);
  const bound = returning?.bound ?? prepared;
  const facts = compile(
    node,
    explains ? bindBody(explained(bound.statement), statement.params, counters) : bound,
  );
  checkTouched(facts, node.schema);
  const kind = explains ? "read" : classifyWrite(facts);
  const sequenceRoot = node.schema.sequenceRoot();
  const wroteSequence =
    sequenceRoot !== undefined &&
    (facts.rootsWritten.has(sequenceRoot) || facts.subRootsWritten.has(sequenceRoot));
  if (kind === "read") {
    const rows =
      bound.statement.syntax === "query"
        ? readExact(node, bound, budget)
        : runGuarded(node, bound, budget, returning);
    const out = result({ rowsWritten: 0, lastRowId: null }, rows, format);
    return { entry: null, result: out, wroteSequence: false };
  }
  if (kind === "ddl") {
    if (facts.writesVirtualTable) {
      // DROP TABLE of a parent deletes its rows first; foreign-key actions then
      // fire the child's triggers, which may write fts5: replicas run DDL with
      // triggers off and take its rows from capture, which fts5 writes never reach.
      throw new ApiError(
        "INVALID_SQL",
        "this schema change would write a virtual table (foreign-key actions firing triggers " +
          "that write fts5): drop those triggers first, change the schema, and create them again",
        { construct: "schema change writing a virtual table" },
      );
    }
    return { ...runDdl(node, bound, record), wroteSequence };
  }
  const replay = {
    virtualTables: () => node.schema.replayableVirtualTables(),
    sequenceRoot,
  };
  if (kind === "sql") checkReplayable(facts, replay);
  const rowidBefore = facts.setsLastRowId ? connectionRowid(node) : null;
  // A DML statement that fails once running leaves changes() at 0, as SQLite does.
  counters.changes = 0;
  const rows = runGuarded(node, bound, budget, returning);
  const taken = facts.writesVirtualTable
    ? countThenTake(node.sql, record)
    : takeWithCounts(node.sql, record);
  if (facts.writesVirtualTable) refuseRandomRowids(node, taken.changes);
  const changes = taken.changes;
  const rowsWritten = taken.counts.changes;
  // SQLite moves last_insert_rowid() only when the statement inserted into a
  // rowid table (not for an upsert's update, nor WITHOUT ROWID); when the value
  // did not change, the row inserted with that same rowid is the tell.
  const rowidAfter = taken.counts.lastRowId;
  const inserted =
    rowidBefore !== null &&
    rowsWritten > 0 &&
    (rowidAfter !== rowidBefore || changes.some((c) => c.op === "I" && c.nk === `i${rowidAfter}`));
  afterStatement(counters, rowsWritten, inserted ? rowidAfter : null);
  const lastRowId = inserted ? toApiValue(BigInt(rowidAfter)) : null;
  const out = result({ rowsWritten, lastRowId }, rows, format);
  // A large write that every replica computes alike ships as its statement:
  // one statement to run instead of every row to apply, checked all the same by
  // the effects digest. Replicas run it with triggers on, so its program, triggers
  // included, must call only deterministic functions and read no virtual table.
  const asStatement =
    kind === "sql" ||
    (statementMinRows > 0 &&
      changes.length >= statementMinRows &&
      !facts.readsVirtualTable &&
      isReplayable(facts, { sequenceRoot }) &&
      insertedAtMaxRowid(node, changes).length === 0);
  if (asStatement) {
    const run = guardedStatement(bound);
    const params = run.params.map(encodeBindable);
    const rowid = facts.setsLastRowId && rowsWritten > 0;
    const effects = statementEffects(changes, rowsWritten, rowid ? taken.counts.lastRowId : null);
    const entry: LogEntry = {
      kind: "sql",
      sql: run.sql,
      params,
      effects,
      ...(rowid ? { rowid } : {}),
    };
    return { entry, result: out, wroteSequence };
  }
  refuseWideMoves(node, changes);
  if (changes.length === 0) return { entry: null, result: out, wroteSequence };
  // Replicas check rows by digest only where a foreign key joins their tables
  // (cascades may act there); elsewhere every image is the master's and every
  // update and delete must find its row, which is all a digest would tell.
  const entry: LogEntry = node.schema.touchesForeignKeys(changes)
    ? { kind: "rows", changes, effects: effectsHash(changes) }
    : { kind: "rows", changes };
  return { entry, result: out, wroteSequence };
}

/**
 * A row whose image has more cells than one set list may hold (a 100-column
 * table keyed by its rowid) cannot move to another rowid in one statement on a
 * replica, and two would pass a state the master never had: refused.
 */
function refuseWideMoves(node: SqlNode, changes: readonly Change[]): void {
  for (const change of changes) {
    if (change.op !== "U" || change.ok === change.nk) continue;
    const table = node.schema.table(change.t);
    if (table === undefined || !rowsTooWideToMove(table)) continue;
    throw new ApiError(
      "INVALID_SQL",
      `changing the rowid of a row of ${table.name} is not allowed: a table of 100 columns ` +
        "without an INTEGER PRIMARY KEY has rows too wide to move in one statement on the " +
        "replicas; give it an INTEGER PRIMARY KEY, or delete the row and insert it again",
      { construct: "rowid change in a 100-column table", name: table.name },
    );
  }
}

/** Runs the statement; `returning`: its RETURNING clause was rewritten for exact rows. */
function runGuarded(
  node: SqlNode,
  bound: BoundBody,
  budget: ResultBudget,
  returning: ReturningPlan | null,
): ExactRows | null {
  const run = guardedStatement(bound);
  const cursor = node.sql.exec(run.sql, ...run.params);
  const rows =
    returning === null
      ? readRuntime(cursor, budget)
      : readReturning(cursor, returning.names, budget);
  return rows.columns.length === 0 ? null : rows;
}

function runDdl(
  node: SqlNode,
  bound: BoundBody,
  record: RecordBudget,
): { entry: LogEntry; result: StatementResult } {
  const before = [...node.schema.objects()];
  const tablesBefore = node.schema.tables();
  // ALTER TABLE refuses to drop or rename a column a trigger names: capture
  // triggers go first and come back after.
  if (upper(bound.statement.tokens[0]) === "ALTER") dropCaptureTriggers(node.sql, node.schema);
  node.sql.exec(bound.body, ...bound.params).toArray();
  node.schema.invalidate();
  const diff = diffSchema(before, node.schema.objects());
  checkSchemaChange(diff, node.schema.tables(), tablesBefore);
  syncCaptureTriggers(node.sql, node.schema);
  const changes = takeChanges(node.sql, record);
  let sql = bound.body;
  for (const name of createdTables(diff, before)) {
    // A virtual table's shadow tables fill themselves on every node.
    const table = node.schema.table(name);
    if (table === undefined || !isCapturedTable(table)) continue;
    // CREATE TABLE ... AS SELECT: replicas create the table as SQLite stored it
    // and take its rows, instead of running the SELECT themselves.
    const stored = node.schema.objects().find((o) => o.type === "table" && o.name === name);
    if (stored?.sql) sql = stored.sql;
    changes.push(...tableRows(node, name, record));
  }
  // DDL writes no rows of its own: SQLite's changes() still counts the last DML.
  const out: StatementResult = { rowsWritten: 0, lastRowId: null };
  const entry: LogEntry = {
    kind: "ddl",
    sql,
    changes,
    effects: effectsHash(changes),
    tables: changedTables(diff),
  };
  return { entry, result: out };
}

/** Every row of a table as insert changes, images exact. */
export function tableRows(node: SqlNode, name: string, record?: RecordBudget): Change[] {
  const table = node.schema.table(name);
  if (table === undefined) return [];
  const keySql = rowSql(keySqlColumns(table));
  const image = rowSql(imageSqlColumns(table));
  const out: Change[] = [];
  const rows = node.sql.exec(`SELECT ${keySql}, ${image} FROM ${quoteIdent(name)}`).raw();
  eachRowToEnd(rows, ([nk, img]) => {
    const change: Change = { t: name, op: "I", nk: String(nk), img: String(img) };
    record?.add(32 + change.t.length + (change.nk?.length ?? 0) + (change.img?.length ?? 0));
    out.push(change);
  });
  return out;
}
