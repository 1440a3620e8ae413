/**
 * The master's local commit of a libSQL program (core/hrana/program.ts): the
 * program runs in one synchronous transaction, and what it wrote becomes one
 * log record with its saved result. A program that wrote nothing appends
 * nothing and takes no LSN.
 */
import { freshCounters } from "../../core/connection-counters";
import type { ProgramRequest, ProgramResponse } from "../../core/hrana/program";
import type { LogRecord } from "../../core/protocol";
import { encodeBookmark } from "../../core/protocol";
import { RecordBudget } from "../../core/record-budget";
import type { NodeStore } from "../node-store";
import { runProgram } from "../sqlite/program";
import { ResultBudget } from "../sqlite/read";
import type { SqlNode } from "../sqlite/schema";
import { appendCommit } from "./commit";

export interface ProgramCommitInput {
  lsn: number;
  term: number;
  logEnd: number;
  key: string | undefined;
  requestHash: string;
  statementMinRows: number;
  recordMaxBytes: number;
  request: ProgramRequest;
}

export interface ProgramCommitted {
  response: ProgramResponse;
  record: LogRecord | null;
  bytes: number;
  responseBytes: number;
}

export function commitProgram(
  storage: DurableObjectStorage,
  node: SqlNode,
  store: NodeStore,
  input: ProgramCommitInput,
): ProgramCommitted {
  const ts = Date.now();
  try {
    return storage.transactionSync(() => {
      const record = new RecordBudget(input.recordMaxBytes);
      const run = runProgram(storage, node, {
        units: input.request.units,
        resume: input.request.resume ?? null,
        foreignKeysOff: input.request.foreignKeysOff ?? false,
        counters: input.request.counters ?? freshCounters(),
        budget: new ResultBudget(),
        limits: { statementMinRows: input.statementMinRows, record },
      });
      const base = {
        outcomes: run.outcomes,
        open: run.open,
        foreignKeysOff: run.foreignKeysOff,
        counters: run.counters,
      };
      if (run.entries.length === 0) {
        const response: ProgramResponse = { lsn: null, bookmark: null, ...base };
        return { response, record: null, bytes: 0, responseBytes: 0 };
      }
      const response: ProgramResponse = {
        lsn: input.lsn,
        bookmark: encodeBookmark(input.lsn),
        ...base,
      };
      return appendCommit(node, store, input, ts, { ...run, response }, record);
    });
  } catch (error) {
    node.schema.invalidate();
    throw error;
  }
}
