/**
 * A program: what a libSQL pipeline asks the master to do, in one local
 * transaction and at most one log record. Units are the pipeline's execute,
 * batch and sequence requests; each step is SQL or transaction control, with
 * an optional condition on earlier steps of its unit.
 *
 * An interactive transaction spans several HTTP requests, and a Durable
 * Object cannot hold a SQLite transaction open across them. So the stream
 * keeps what the transaction ran and the digest of every outcome the client
 * saw; each later request re-runs it all first, and the COMMIT commits only if
 * every outcome is the same again (else TRANSACTION_CONFLICT, retryable). The
 * transaction is then serializable: at its commit point it saw exactly what it
 * had seen.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import type { ConnectionCounters } from "../connection-counters";
import type { ErrorBody } from "../errors";
import { singleStatement } from "../sql-statement";
import type { Statement, StatementResult } from "../protocol";
import type { BeginMode, Control } from "./control";
import type { HranaCond } from "./proto";

/** An open transaction may hold this many statements: each request replays them all. */
export const MAX_TRANSACTION_STATEMENTS = 1000;

export type ProgramOp = { kind: "sql"; statement: Statement } | Control;

export interface ProgramStep {
  condition?: HranaCond | null;
  op: ProgramOp;
}

export interface ProgramUnit {
  steps: ProgramStep[];
  /** A sequence stops at its first error: each step runs only if the one before succeeded. */
  sequence?: boolean;
}

/** A statement the open transaction ran, and the digest of what the client saw. */
export interface ReplayStep {
  statement: Statement;
  digest: string;
}

export interface OpenTransaction {
  mode: BeginMode;
  steps: ReplayStep[];
  /** The client asked for foreign_keys=OFF (honoured as control.ts says). */
  foreignKeysOff: boolean;
  /** The stream's connection counters at BEGIN, for the replay to read. */
  counters?: ConnectionCounters;
}

export type StepOutcome =
  | { ok: true; result: StatementResult }
  | { ok: false; error: ErrorBody }
  | null;

export interface ProgramRequest {
  cluster: string;
  /** The stream's open transaction, to resume. */
  resume?: OpenTransaction | null;
  foreignKeysOff?: boolean;
  /** The stream's connection counters (a resumed transaction brings its own). */
  counters?: ConnectionCounters;
  units: ProgramUnit[];
  idempotencyKey?: string;
  requestHash?: string;
}

export interface ProgramResponse {
  /** The record's LSN when the program wrote; null when it only read. */
  lsn: number | null;
  bookmark: string | null;
  /** One outcome per step, per unit. */
  outcomes: StepOutcome[][];
  /** The transaction left open at the end, for the stream to keep. */
  open: OpenTransaction | null;
  foreignKeysOff: boolean;
  /** The stream's connection counters after the program. */
  counters?: ConnectionCounters;
  replayed?: true;
}

/** What a statement's outcome looked like to the client, as a digest. */
export function outcomeDigest(outcome: StepOutcome): string {
  const seen =
    outcome === null
      ? null
      : outcome.ok
        ? outcome.result
        : { error: outcome.error.code, message: outcome.error.message };
  return bytesToHex(sha256(utf8ToBytes(JSON.stringify(seen)))).slice(0, 32);
}

/**
 * Whether every step is a plain query (SELECT, WITH, VALUES, EXPLAIN) with no
 * condition: such a program may be tried on a replica, which refuses, by
 * SQLite's compiled program, anything that writes.
 */
export function readCandidate(units: readonly ProgramUnit[]): boolean {
  return units.every((u) =>
    u.steps.every((s) => {
      if (s.op.kind !== "sql" || s.condition) return false;
      try {
        const syntax = singleStatement(s.op.statement.sql).syntax;
        return syntax === "query" || syntax === "explain";
      } catch {
        return false;
      }
    }),
  );
}
