/**
 * Running one Hrana pipeline against a cluster. Stream requests are read in
 * order: `store_sql`, `close_sql`, `close` and `get_autocommit` act on the
 * stream at once; `execute`, `batch` and `sequence` become the units of one
 * program. A program of plain queries outside a transaction goes to replicas
 * (each statement one read, at the pipeline's consistency); any other runs on
 * the master as one transaction and at most one replicated commit, with the
 * same full sync, waiter and saved results as `/exec`.
 */
import { type ConnectionCounters, freshCounters } from "../../core/connection-counters";
import { ApiError, type Result } from "../../core/errors";
import { controlOf } from "../../core/hrana/control";
import { checkConditions } from "../../core/hrana/conditions";
import {
  type OpenTransaction,
  type ProgramRequest,
  type ProgramResponse,
  type ProgramUnit,
  readCandidate,
} from "../../core/hrana/program";
import type { BatchResult, HranaStmt, StreamRequest, StreamResult } from "../../core/hrana/proto";
import {
  MAX_STORED_SQL,
  sqlText,
  toHranaError,
  toStatement,
  toStmtResult,
} from "../../core/hrana/translate";
import { splitStatements } from "../../core/hrana/control";
import { onMaster } from "../cluster";
import { toApiError } from "../errors";
import { isClusterError, type ReadContext, readOnReplicas } from "./replica-reads";

/** What a stream keeps between requests. */
export interface StreamState {
  stored: Map<number, string>;
  open: OpenTransaction | null;
  foreignKeysOff: boolean;
  closed: boolean;
  /** Why the open transaction ended without the client's ROLLBACK, until it sends one. */
  aborted: string | null;
  /** What last_insert_rowid(), changes() and total_changes() read for this stream. */
  counters: ConnectionCounters;
}

export function newStreamState(): StreamState {
  return {
    stored: new Map(),
    open: null,
    foreignKeysOff: false,
    closed: false,
    aborted: null,
    counters: freshCounters(),
  };
}

export interface PipelineContext extends ReadContext {
  idempotencyKey?: string;
  requestHash?: string;
}

/** A pipeline may run this many statements in all (batches and sequences included). */
export const MAX_PIPELINE_STATEMENTS = 10_000;

type Slot =
  | { kind: "done"; result: StreamResult }
  | { kind: "unit"; request: "execute" | "batch" | "sequence"; unit: number; wantRows: boolean };

const errorResult = (error: unknown): StreamResult => ({
  type: "error",
  error: toHranaError(toApiError(error).toBody()),
});

export interface PipelineOutcome {
  results: StreamResult[];
  /** The bookmark of the commit this pipeline made, if it made one. */
  bookmark: string | null;
  /** The members that ran its statements ("master", "replica-2", …). */
  servedBy: string[];
  /** The program failed for the cluster's reasons (unavailable, not durable, timed out): retry. */
  retryable: boolean;
}

export async function runPipeline(
  env: Env,
  context: PipelineContext,
  state: StreamState,
  requests: readonly StreamRequest[],
): Promise<PipelineOutcome> {
  const slots: Slot[] = [];
  const units: ProgramUnit[] = [];
  for (const request of requests) {
    if (state.closed) {
      slots.push({
        kind: "done",
        result: errorResult(
          new ApiError("BAD_REQUEST", "the stream is closed", { hranaCode: "STREAM_CLOSED" }),
        ),
      });
      continue;
    }
    try {
      slots.push(takeControl(request, state, units) ?? take(request, state, units));
    } catch (error) {
      slots.push({ kind: "done", result: errorResult(error) });
    }
  }
  let outcome: Result<ProgramResponse> | null = null;
  const servedBy = new Set<string>();
  const statements = units.reduce((n, u) => n + u.steps.length, 0);
  if (statements > MAX_PIPELINE_STATEMENTS) {
    const error = new ApiError(
      "BAD_REQUEST",
      `a pipeline may hold at most ${MAX_PIPELINE_STATEMENTS} statements (it held ${statements}): nothing ran`,
      { hranaCode: "PIPELINE_TOO_LARGE" },
    );
    outcome = { ok: false, error: error.toBody() };
  } else if (units.length > 0) outcome = await runUnits(env, context, state, units, servedBy);
  if (outcome !== null && !outcome.ok) {
    // A transaction whose request failed is over and nothing of it was written,
    // but the client still believes it is in it: until it sends ROLLBACK (or
    // COMMIT), its statements are refused, never run on their own.
    const began = units.some((u) => u.steps.some((step) => step.op.kind === "begin"));
    if (state.open !== null || began) state.aborted = outcome.error.message;
    state.open = null;
  }
  if (outcome?.ok) {
    state.open = outcome.value.open;
    state.foreignKeysOff = outcome.value.foreignKeysOff;
    state.counters = outcome.value.counters ?? state.counters;
  }
  const results = slots.map((slot) => (slot.kind === "done" ? slot.result : answer(slot, outcome)));
  const bookmark = outcome?.ok ? outcome.value.bookmark : null;
  const retryable =
    outcome !== null &&
    !outcome.ok &&
    isClusterError(outcome.error) &&
    outcome.error.details?.hranaCode === undefined;
  return { results, bookmark, servedBy: [...servedBy], retryable };
}

const EMPTY_RESULT = { cols: [], rows: [], affected_row_count: 0, last_insert_rowid: null };

/**
 * A request while the stream's transaction is aborted (its request failed), or
 * a ROLLBACK of an open transaction before anything else in the pipeline:
 * answered here, without the master. Null when the request runs as usual.
 */
function takeControl(
  request: StreamRequest,
  state: StreamState,
  units: readonly ProgramUnit[],
): Slot | null {
  if (request.type !== "execute" && request.type !== "batch" && request.type !== "sequence") {
    return null;
  }
  const only = request.type === "execute" ? controlOf(sqlText(request.stmt, state.stored)) : null;
  const executed: StreamResult = {
    type: "ok",
    response: { type: "execute", result: EMPTY_RESULT },
  };
  if (state.aborted !== null) {
    const why = state.aborted;
    if (only?.kind === "rollback") {
      state.aborted = null;
      return { kind: "done", result: executed };
    }
    if (only?.kind === "commit") state.aborted = null;
    return {
      kind: "done",
      result: errorResult(
        new ApiError("BAD_REQUEST", `the transaction was rolled back (${why}); send ROLLBACK`, {
          hranaCode: "TRANSACTION_ABORTED",
        }),
      ),
    };
  }
  // SQLite never fails a ROLLBACK: the open transaction goes without a replay.
  if (only?.kind === "rollback" && state.open !== null && units.length === 0) {
    state.open = null;
    return { kind: "done", result: executed };
  }
  return null;
}

/** Reads one request: done now, or a unit of the program. */
function take(request: StreamRequest, state: StreamState, units: ProgramUnit[]): Slot {
  switch (request.type) {
    case "close":
      state.closed = true;
      return { kind: "done", result: { type: "ok", response: { type: "close" } } };
    case "store_sql":
      if (state.stored.has(request.sql_id)) {
        throw new ApiError("BAD_REQUEST", `sql_id ${request.sql_id} is already stored`, {
          hranaCode: "SQL_STORE_FAILED",
        });
      }
      if (state.stored.size >= MAX_STORED_SQL) {
        throw new ApiError(
          "BAD_REQUEST",
          `a stream may store at most ${MAX_STORED_SQL} SQL texts`,
          {
            hranaCode: "SQL_STORE_FAILED",
          },
        );
      }
      state.stored.set(request.sql_id, request.sql);
      return { kind: "done", result: { type: "ok", response: { type: "store_sql" } } };
    case "close_sql":
      state.stored.delete(request.sql_id);
      return { kind: "done", result: { type: "ok", response: { type: "close_sql" } } };
    case "get_autocommit":
      // Known only after the program runs; answered from the state before it.
      return {
        kind: "done",
        result: {
          type: "ok",
          response: { type: "get_autocommit", is_autocommit: state.open === null },
        },
      };
    case "describe":
      throw new ApiError("BAD_REQUEST", "describe is not supported by this server", {
        hranaCode: "NOT_SUPPORTED",
      });
    case "execute":
      units.push({ steps: [step(request.stmt, state)] });
      return {
        kind: "unit",
        request: "execute",
        unit: units.length - 1,
        wantRows: request.stmt.want_rows !== false,
      };
    case "batch": {
      const steps = request.batch.steps;
      checkConditions(steps.map((s) => s.condition));
      units.push({
        steps: steps.map((s) => ({ ...step(s.stmt, state), condition: s.condition ?? null })),
      });
      return { kind: "unit", request: "batch", unit: units.length - 1, wantRows: true };
    }
    case "sequence": {
      const sql = sqlText(request, state.stored);
      units.push({
        sequence: true,
        steps: splitStatements(sql).map((text) => step({ sql: text }, state)),
      });
      return { kind: "unit", request: "sequence", unit: units.length - 1, wantRows: false };
    }
  }
}

function step(stmt: HranaStmt, state: StreamState): ProgramUnit["steps"][number] {
  const statement = toStatement(stmt, state.stored);
  const control = controlOf(statement.sql);
  if (control !== null) {
    if (statement.params.length > 0) {
      throw new ApiError("BAD_REQUEST", "transaction control takes no parameters");
    }
    return { op: control };
  }
  return { op: { kind: "sql", statement } };
}

async function runUnits(
  env: Env,
  context: PipelineContext,
  state: StreamState,
  units: ProgramUnit[],
  servedBy: Set<string>,
): Promise<Result<ProgramResponse>> {
  if (state.open === null && readCandidate(units)) {
    const read = await readOnReplicas(
      env,
      { ...context, foreignKeysOff: state.foreignKeysOff, counters: state.counters },
      units,
      servedBy,
    );
    if (read !== null) return read;
    servedBy.clear();
  }
  servedBy.add("master");
  const request: ProgramRequest = {
    cluster: context.cluster,
    resume: state.open,
    foreignKeysOff: state.foreignKeysOff,
    counters: state.counters,
    units,
    ...(context.idempotencyKey === undefined
      ? {}
      : { idempotencyKey: context.idempotencyKey, requestHash: context.requestHash }),
  };
  try {
    return (await onMaster(env, context.cluster, (master) =>
      master.program(request),
    )) as Result<ProgramResponse>;
  } catch (error) {
    return { ok: false, error: toApiError(error).toBody() };
  }
}

function answer(
  slot: Extract<Slot, { kind: "unit" }>,
  outcome: Result<ProgramResponse> | null,
): StreamResult {
  if (outcome === null || !outcome.ok) {
    return {
      type: "error",
      error: toHranaError(
        outcome?.error ?? { code: "UNAVAILABLE", message: "the request did not run" },
      ),
    };
  }
  const lsn = outcome.value.lsn;
  const steps = outcome.value.outcomes[slot.unit] ?? [];
  if (slot.request === "batch") {
    const result: BatchResult = { step_results: [], step_errors: [] };
    for (const step of steps) {
      result.step_results.push(step?.ok ? toStmtResult(step.result, true, lsn) : null);
      result.step_errors.push(step && !step.ok ? toHranaError(step.error) : null);
    }
    return { type: "ok", response: { type: "batch", result } };
  }
  const failed = steps.find((s) => s !== null && !s.ok);
  if (failed && !failed.ok) return { type: "error", error: toHranaError(failed.error) };
  if (slot.request === "sequence") return { type: "ok", response: { type: "sequence" } };
  const first = steps[0];
  if (!first?.ok) {
    return { type: "error", error: { message: "the statement did not run", code: "SQLITE_ERROR" } };
  }
  return {
    type: "ok",
    response: { type: "execute", result: toStmtResult(first.result, slot.wantRows, lsn) },
  };
}
