/**
 * A libSQL program of plain queries outside a transaction, run where the
 * pipeline's consistency sends reads: each statement one read, as `/query`
 * would run it, with the stream's connection counters.
 */
import type { ErrorBody, Result } from "../../core/errors";
import type { ProgramResponse, ProgramUnit, StepOutcome } from "../../core/hrana/program";
import type { Consistency, QueryResponse } from "../../core/protocol";
import type { ConnectionCounters } from "../../core/connection-counters";
import { toApiError } from "../errors";
import { routeRead } from "../read-route";

/** Where and how a pipeline reads. */
export interface ReadContext {
  cluster: string;
  consistency: Consistency;
  minLsn: number;
  /** The stream's foreign_keys=OFF, kept across a read on a replica. */
  foreignKeysOff?: boolean;
  /** The stream's connection counters, which a read on a replica reads. */
  counters?: ConnectionCounters;
  cf?: unknown;
}

/**
 * Each query as one read where the pipeline's consistency sends it. Null when
 * SQLite compiled one as a write (a WITH … INSERT): the program goes to the
 * master instead, and since nothing was written, running it all there is the
 * same as running it in order.
 */
export async function readOnReplicas(
  env: Env,
  context: ReadContext,
  units: ProgramUnit[],
  servedBy: Set<string>,
): Promise<Result<ProgramResponse> | null> {
  const outcomes: StepOutcome[][] = [];
  for (const unit of units) {
    const done: StepOutcome[] = [];
    for (const s of unit.steps) {
      if (s.op.kind !== "sql") return null;
      if (unit.sequence && done.some((o) => o !== null && !o.ok)) {
        done.push(null);
        continue;
      }
      let read: Result<QueryResponse>;
      try {
        read = await routeRead(
          env,
          {
            cluster: context.cluster,
            sql: s.op.statement.sql,
            params: s.op.statement.params,
            consistency: context.consistency,
            minLsn: context.minLsn,
            format: "arrays",
            ...(context.counters === undefined ? {} : { counters: context.counters }),
          },
          context.cf,
        );
      } catch (error) {
        return { ok: false, error: toApiError(error).toBody() };
      }
      if (!read.ok && read.error.details?.compiledAs === "write") return null;
      if (!read.ok && isClusterError(read.error)) return read;
      if (read.ok) servedBy.add(read.value.servedBy);
      done.push(
        read.ok
          ? {
              ok: true,
              result: {
                rowsWritten: 0,
                lastRowId: null,
                columns: "columns" in read.value ? read.value.columns : [],
                rows: read.value.rows,
              },
            }
          : { ok: false, error: read.error },
      );
    }
    outcomes.push(done);
  }
  return {
    ok: true,
    value: {
      lsn: null,
      bookmark: null,
      outcomes,
      open: null,
      foreignKeysOff: context.foreignKeysOff ?? false,
      ...(context.counters === undefined ? {} : { counters: context.counters }),
    },
  };
}

/** Errors of the cluster, not of the statement: the whole request fails with them. */
export function isClusterError(error: ErrorBody): boolean {
  return (
    error.code === "UNAVAILABLE" || error.code === "NOT_DURABLE" || error.code === "COMMIT_TIMEOUT"
  );
}
