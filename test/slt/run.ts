/**
 * Runs one sqllogictest script against an executor and compares every result
 * the way the reference runner does in verify mode (sqllogictest.c), with one
 * deliberate difference: the reference stops comparing at the shorter of the
 * two value lists, this runner wants as many values as expected.
 */
import { formatRows, hashOfExpected, hashValues, resultLines, sortValues } from "./format";
import { documentedLimit, type Refusal } from "./limits";
import { type Condition, type QueryRecord, type SltRecord, parseScript } from "./parse";
import type { SqlValue } from "./sql-value";

export type Refused = { readonly ok: false } & Refusal;
export type StatementOutcome = { readonly ok: true } | Refused;
export type QueryOutcome =
  | {
      readonly ok: true;
      readonly columns: readonly string[];
      readonly rows: readonly (readonly SqlValue[])[];
    }
  | Refused;

/** Where the SQL runs. An executor that throws fails the record, not the run. */
export interface SltExecutor {
  statement(sql: string): Promise<StatementOutcome>;
  query(sql: string): Promise<QueryOutcome>;
}

export interface Failure {
  readonly line: number;
  readonly sql: string;
  readonly what: string;
  readonly expected?: readonly string[];
  readonly got?: readonly string[];
}

export interface Timing {
  statements: number;
  statementMs: number;
  queries: number;
  queryMs: number;
}

export interface FileReport {
  readonly file: string;
  /** Statement and query records reached: passed + failed + both kinds of skips. */
  records: number;
  passed: number;
  failed: number;
  /** Records for other engines (`onlyif mysql`, `skipif sqlite`). */
  skippedForEngine: number;
  /** Refusals that are documented limits, by limit id. */
  readonly skippedByLimit: Record<string, number>;
  /** The first `maxFailures` failures in detail. */
  readonly failures: Failure[];
  /** The line of a `halt` that stopped the run. */
  haltedAt: number | undefined;
  readonly timing: Timing;
  durationMs: number;
}

export interface RunOptions {
  /** The engine name `skipif`/`onlyif` compare with, ignoring case. */
  readonly engine?: string;
  readonly maxFailures?: number;
}

/** The reference runner's threshold until a script sets one. */
const DEFAULT_HASH_THRESHOLD = 8;

/** Values shown of a result that differs, beside its hash line. */
const SHOWN_VALUES = 24;

function appliesTo(conditions: readonly Condition[], engine: string): boolean {
  return conditions.every((condition) => {
    const same = condition.engine.toLowerCase() === engine.toLowerCase();
    return condition.kind === "skipif" ? !same : same;
  });
}

function sameLines(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((line, i) => line === b[i]);
}

class ScriptRun {
  private hashThreshold = DEFAULT_HASH_THRESHOLD;
  /** Label -> md5 of the first result filed under it. */
  private readonly labels = new Map<string, string>();
  readonly report: FileReport;

  constructor(
    file: string,
    private readonly executor: SltExecutor,
    private readonly engine: string,
    private readonly maxFailures: number,
  ) {
    this.report = {
      file,
      records: 0,
      passed: 0,
      failed: 0,
      skippedForEngine: 0,
      skippedByLimit: {},
      failures: [],
      haltedAt: undefined,
      timing: { statements: 0, statementMs: 0, queries: 0, queryMs: 0 },
      durationMs: 0,
    };
  }

  /** Runs one record; false when the script stops here. */
  async step(record: SltRecord): Promise<boolean> {
    if (!appliesTo(record.conditions, this.engine)) {
      if (record.kind === "statement" || record.kind === "query") {
        this.report.records++;
        // A skipped query still files its label; disagreeing there fails it instead.
        if (record.kind === "statement" || this.fileSkippedLabel(record)) {
          this.report.skippedForEngine++;
        }
      }
      return true;
    }
    switch (record.kind) {
      case "hash-threshold":
        this.hashThreshold = record.threshold;
        return true;
      case "halt":
        this.report.haltedAt = record.line;
        return false;
      case "invalid":
        this.report.records++;
        this.fail({ line: record.line, sql: "", what: record.reason });
        return !record.stops;
      case "statement":
        this.report.records++;
        await this.statement(record.line, record.sql, record.expect);
        return true;
      case "query":
        this.report.records++;
        await this.query(record);
        return true;
    }
  }

  private pass(): void {
    this.report.passed++;
  }

  private fail(failure: Failure): void {
    this.report.failed++;
    if (this.report.failures.length < this.maxFailures) this.report.failures.push(failure);
  }

  /** A refusal is a skip when it is a documented limit, else a failure. */
  private refused(line: number, sql: string, refusal: Refusal): void {
    const limit = documentedLimit(sql, refusal);
    if (limit === undefined) {
      this.fail({ line, sql, what: `refused ${refusal.code}: ${refusal.message}` });
      return;
    }
    this.report.skippedByLimit[limit.id] = (this.report.skippedByLimit[limit.id] ?? 0) + 1;
  }

  private async timed<T>(kind: "statement" | "query", run: () => Promise<T>): Promise<T> {
    const started = Date.now();
    try {
      return await run();
    } finally {
      const timing = this.report.timing;
      if (kind === "statement") {
        timing.statements++;
        timing.statementMs += Date.now() - started;
      } else {
        timing.queries++;
        timing.queryMs += Date.now() - started;
      }
    }
  }

  private async statement(line: number, sql: string, expect: "ok" | "error"): Promise<void> {
    let outcome: StatementOutcome;
    try {
      outcome = await this.timed("statement", () => this.executor.statement(sql));
    } catch (error) {
      this.fail({ line, sql, what: `executor failed: ${String(error)}` });
      return;
    }
    if (expect === "error") {
      if (outcome.ok) this.fail({ line, sql, what: "statement succeeded, expected an error" });
      else this.pass();
      return;
    }
    if (outcome.ok) this.pass();
    else this.refused(line, sql, outcome);
  }

  private async query(record: QueryRecord): Promise<void> {
    const { line, sql } = record;
    let outcome: QueryOutcome;
    try {
      outcome = await this.timed("query", () => this.executor.query(sql));
    } catch (error) {
      this.fail({ line, sql, what: `executor failed: ${String(error)}` });
      return;
    }
    if (!outcome.ok) {
      this.refused(line, sql, outcome);
      return;
    }
    if (outcome.columns.length !== record.types.length) {
      this.fail({
        line,
        sql,
        what: `wrong number of result columns: expected ${record.types.length}, got ${outcome.columns.length}`,
      });
      return;
    }
    const values = sortValues(
      formatRows(outcome.rows, record.types),
      record.types.length,
      record.sort,
    );
    const got = resultLines(values, this.hashThreshold);
    const labelAgrees = this.fileLabel(record.label, hashValues(values));
    if (!sameLines(got, record.expected)) {
      const shown = got.length === 1 && values.length > 1 ? values.slice(0, SHOWN_VALUES) : [];
      this.fail({
        line,
        sql,
        what: "wrong result",
        expected: record.expected,
        got: shown.length > 0 ? [...got, ...shown] : got,
      });
    } else if (!labelAgrees) {
      this.fail({
        line,
        sql,
        what: `labeled result [${record.label}] does not agree with previous values`,
      });
    } else {
      this.pass();
    }
  }

  /** Files a label's first hash; false when an earlier result under it differs. */
  private fileLabel(label: string | undefined, hash: string): boolean {
    if (label === undefined) return true;
    const earlier = this.labels.get(label);
    if (earlier === undefined) this.labels.set(label, hash);
    return earlier === undefined || earlier === hash;
  }

  /**
   * A skipped query still files its expected result under its label, as the
   * reference does; false (and a failure) when that disagrees with an earlier one.
   */
  private fileSkippedLabel(record: QueryRecord): boolean {
    if (record.label === undefined || record.expected.length === 0) return true;
    if (this.fileLabel(record.label, hashOfExpected(record.expected))) return true;
    this.fail({
      line: record.line,
      sql: record.sql,
      what: `labeled result [${record.label}] of a skipped record does not agree with previous values`,
    });
    return false;
  }
}

/** Runs every record of one script in order and reports on it. */
export async function runScript(
  file: string,
  script: string,
  executor: SltExecutor,
  options: RunOptions = {},
): Promise<FileReport> {
  const started = Date.now();
  const run = new ScriptRun(file, executor, options.engine ?? "sqlite", options.maxFailures ?? 10);
  for (const record of parseScript(script)) {
    if (!(await run.step(record))) break;
  }
  run.report.durationMs = Date.now() - started;
  return run.report;
}
