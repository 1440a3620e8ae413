/**
 * Running a libSQL program (core/hrana/program.ts) on the master, inside the
 * commit's transaction. SQLite's transaction control is carried out here with
 * nested `transactionSync` calls, which the runtime makes savepoints: each
 * statement in one, so a failed statement undoes only itself, as in SQLite;
 * each BEGIN … COMMIT|ROLLBACK in one, so a ROLLBACK undoes only its
 * transaction. A transaction still open at the end is rolled back here and
 * kept by the stream, which replays it on its next request.
 */
import type { ConnectionCounters } from "../../core/connection-counters";
import { ApiError, type ErrorBody } from "../../core/errors";
import type { BeginMode } from "../../core/hrana/control";
import { holds, type StepState } from "../../core/hrana/conditions";
import {
  MAX_TRANSACTION_STATEMENTS,
  type OpenTransaction,
  outcomeDigest,
  type ProgramStep,
  type ProgramUnit,
  type ReplayStep,
  type StepOutcome,
} from "../../core/hrana/program";
import type { LogEntry, Statement } from "../../core/protocol";
import { singleStatement, upper } from "../../core/sql-statement";
import type { ResultBudget } from "./read";
import type { SqlNode } from "./schema";
import { asSqlError } from "./sql-errors";
import { runWrite, type WriteLimits } from "./write";

export interface ProgramRun {
  entries: LogEntry[];
  outcomes: StepOutcome[][];
  open: OpenTransaction | null;
  wroteSequence: boolean;
  foreignKeysOff: boolean;
  /** The stream's connection counters after the program. */
  counters: ConnectionCounters;
}

export interface ProgramInput {
  units: readonly ProgramUnit[];
  resume: OpenTransaction | null;
  foreignKeysOff: boolean;
  /** The stream's connection counters, its SQL reads them (a resumed transaction has its own). */
  counters: ConnectionCounters;
  budget: ResultBudget;
  limits: WriteLimits;
}

/** Thrown out of a transaction's savepoint to undo it. */
class Undo {
  constructor(readonly why: "rollback" | "open") {}
}

const noTransaction = (what: string): ErrorBody => ({
  code: "INVALID_SQL",
  message: `cannot ${what} - no transaction is active`,
});

export class TransactionConflict extends ApiError {
  constructor(step: number) {
    super(
      "UNAVAILABLE",
      `the transaction's statement ${step} no longer gives the result it gave: another write ` +
        "came between; nothing was written, run the transaction again",
      { hranaCode: "TRANSACTION_CONFLICT", retryAfterSeconds: 0 },
    );
  }
}

export function runProgram(
  storage: DurableObjectStorage,
  node: SqlNode,
  input: ProgramInput,
): ProgramRun {
  return new Program(storage, node, input).run();
}

class Program {
  private readonly flat: { unit: number; index: number; step: ProgramStep }[] = [];
  private readonly states: StepState[][];
  private readonly out: ProgramRun;
  private pos = 0;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly node: SqlNode,
    private readonly input: ProgramInput,
  ) {
    input.units.forEach((unit, u) => {
      unit.steps.forEach((step, index) => {
        this.flat.push({ unit: u, index, step });
      });
    });
    this.states = input.units.map((u) => u.steps.map(() => "skipped" as StepState));
    this.out = {
      entries: [],
      outcomes: input.units.map((u) => u.steps.map(() => null)),
      open: null,
      wroteSequence: false,
      foreignKeysOff: input.foreignKeysOff,
      counters: { ...(input.resume?.counters ?? input.counters) },
    };
  }

  run(): ProgramRun {
    if (this.input.resume) this.transaction(this.input.resume.mode, this.input.resume.steps);
    while (this.pos < this.flat.length) {
      const at = this.flat[this.pos++];
      if (at === undefined || !this.runs(at, true)) continue;
      const op = at.step.op;
      if (op.kind === "begin") {
        this.record(at, { ok: true, result: EMPTY });
        this.transaction(op.mode, []);
      } else if (op.kind === "commit")
        this.record(at, { ok: false, error: noTransaction("commit") });
      else if (op.kind === "rollback") {
        this.record(at, { ok: false, error: noTransaction("rollback") });
      } else if (!this.control(at) && op.kind === "sql") this.statement(at, op.statement, null);
    }
    return this.out;
  }

  /** Whether the step's condition holds; a skipped step keeps its null outcome. */
  private runs(at: (typeof this.flat)[number], autocommit: boolean): boolean {
    const unit = this.input.units[at.unit];
    const states = this.states[at.unit] ?? [];
    if (unit?.sequence && at.index > 0 && states[at.index - 1] !== "ok") return false;
    const cond = at.step.condition;
    return cond === undefined || cond === null || holds(cond, at.index, states, autocommit);
  }

  private record(at: (typeof this.flat)[number], outcome: StepOutcome): void {
    const outcomes = this.out.outcomes[at.unit];
    const states = this.states[at.unit];
    if (outcomes === undefined || states === undefined) return;
    outcomes[at.index] = outcome;
    states[at.index] = outcome === null ? "skipped" : outcome.ok ? "ok" : "error";
  }

  /** PRAGMA foreign_keys: true when the step was one (and is recorded). */
  private control(at: (typeof this.flat)[number]): true | undefined {
    const op = at.step.op;
    if (op.kind === "foreign-keys") {
      // SQLite ignores the pragma inside a transaction; so does this.
      if (this.out.open === null && !this.inTransaction) this.out.foreignKeysOff = !op.on;
      this.record(at, { ok: true, result: EMPTY });
      return true;
    }
    if (op.kind === "foreign-keys-query") {
      // Durable Object SQLite always enforces foreign keys.
      this.record(at, {
        ok: true,
        result: { rowsWritten: 0, lastRowId: null, columns: ["foreign_keys"], rows: [[1]] },
      });
      return true;
    }
    return undefined;
  }

  private inTransaction = false;

  /**
   * BEGIN … COMMIT|ROLLBACK in a savepoint of its own: `replay` first (an
   * open transaction resumed), then the program's steps until it ends.
   */
  private transaction(mode: BeginMode, replay: readonly ReplayStep[]): void {
    const mark = this.out.entries.length;
    // Counters are the connection's, not the transaction's: a rollback keeps them.
    const countersAtBegin = { ...this.out.counters };
    const ran: ReplayStep[] = [];
    this.inTransaction = true;
    try {
      this.storage.transactionSync(() => {
        replay.forEach((step, i) => {
          const outcome = this.attempt(step.statement, mode);
          if (outcomeDigest(outcome) !== step.digest) throw new TransactionConflict(i);
          ran.push(step);
        });
        while (this.pos < this.flat.length) {
          const at = this.flat[this.pos++];
          if (at === undefined || !this.runs(at, false)) continue;
          const op = at.step.op;
          if (op.kind === "commit") {
            this.record(at, { ok: true, result: EMPTY });
            return;
          }
          if (op.kind === "rollback") {
            this.record(at, { ok: true, result: EMPTY });
            throw new Undo("rollback");
          }
          if (op.kind === "begin") {
            this.record(at, {
              ok: false,
              error: {
                code: "INVALID_SQL",
                message: "cannot start a transaction within a transaction",
              },
            });
            continue;
          }
          if (this.control(at)) continue;
          if (op.kind !== "sql") continue;
          const outcome = this.statement(at, op.statement, mode);
          ran.push({ statement: op.statement, digest: outcomeDigest(outcome) });
          if (ran.length > MAX_TRANSACTION_STATEMENTS) {
            // Everything the program did is undone with it, autocommit statements too.
            throw new ApiError(
              "BAD_REQUEST",
              `a transaction over HTTP may hold at most ${MAX_TRANSACTION_STATEMENTS} statements ` +
                "(each request re-runs it): nothing of this request was written",
              { hranaCode: "TRANSACTION_TOO_LARGE" },
            );
          }
        }
        throw new Undo("open");
      });
    } catch (error) {
      if (!(error instanceof Undo)) throw error;
      this.out.entries.length = mark;
      this.node.schema.invalidate();
      if (error.why === "open") {
        this.out.open = {
          mode,
          steps: ran,
          foreignKeysOff: this.out.foreignKeysOff,
          counters: countersAtBegin,
        };
      }
    } finally {
      this.inTransaction = false;
    }
  }

  private statement(
    at: (typeof this.flat)[number],
    statement: Statement,
    mode: BeginMode | null,
  ): StepOutcome {
    const outcome = this.attempt(statement, mode);
    this.record(at, outcome);
    return outcome;
  }

  /** One statement in a savepoint of its own: an error undoes it alone. */
  private attempt(statement: Statement, mode: BeginMode | null): StepOutcome {
    // Moved on only if the statement stands: a failed one leaves them.
    const counters = { ...this.out.counters };
    try {
      const done = this.storage.transactionSync(() => {
        const outcome = runWrite(
          this.node,
          statement,
          this.input.budget,
          "arrays",
          this.input.limits,
          counters,
        );
        if (mode === "readonly" && outcome.entry !== null) {
          throw new ApiError("INVALID_SQL", "attempt to write a readonly database", {
            hranaCode: "SQLITE_READONLY",
          });
        }
        if (this.out.foreignKeysOff) refuseForeignKeyActions(statement, outcome.entry);
        return outcome;
      });
      this.out.counters = counters;
      if (done.entry !== null) this.out.entries.push(done.entry);
      this.out.wroteSequence ||= done.wroteSequence;
      return { ok: true, result: done.result };
    } catch (error) {
      // What SQLite keeps of a failed statement: changes() (0 once it ran).
      this.out.counters.changes = counters.changes;
      const mapped = asSqlError(error);
      if (!(mapped instanceof ApiError) || mapped instanceof TransactionConflict) throw error;
      // DDL that ran before the failure reloaded the schema cache.
      this.node.schema.invalidate();
      return { ok: false, error: mapped.toBody() };
    }
  }
}

const EMPTY = { rowsWritten: 0, lastRowId: null } as const;

/**
 * With foreign_keys=OFF asked for, a DROP TABLE must not run the foreign-key
 * actions Durable Object SQLite always runs: drizzle-kit rebuilds a table by
 * copy, drop and rename, and ON DELETE CASCADE would empty its children. The
 * drop's captured changes are exactly those actions' work (the implicit
 * DELETE fires no triggers), so a drop with any is refused, nothing written.
 */
function refuseForeignKeyActions(statement: Statement, entry: LogEntry | null): void {
  if (entry?.kind !== "ddl" || entry.changes.length === 0) return;
  if (upper(singleStatement(statement.sql).tokens[0]) !== "DROP") return;
  const tables = [...new Set(entry.changes.map((c) => c.t))].sort();
  throw new ApiError(
    "INVALID_SQL",
    `PRAGMA foreign_keys=OFF cannot be honoured: Durable Object SQLite always enforces foreign ` +
      `keys, and this DROP TABLE would run ON DELETE actions on ${entry.changes.length} row(s) ` +
      `of ${tables.join(", ")}. Nothing was written; rebuild the referencing tables first, or ` +
      "remove their rows yourself",
    { hranaCode: "SQLITE_CONSTRAINT", tables },
  );
}
