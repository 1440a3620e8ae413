/**
 * The master's local commit: every statement of a request, its log record and
 * its saved result, in one synchronous transaction. Any refusal or SQL error
 * rolls all of it back, and the schema cache with it.
 */
import { freshCounters } from "../../core/connection-counters";
import { bodyBytes, encodeBody } from "../../core/log-codec";
import type {
  ExecResponse,
  LogEntry,
  LogRecord,
  ResultFormat,
  Statement,
  StatementResult,
} from "../../core/protocol";
import { encodeBookmark } from "../../core/protocol";
import { RecordBudget } from "../../core/record-budget";
import type { NodeStore } from "../node-store";
import { readSequence } from "../sqlite/apply";
import { ResultBudget } from "../sqlite/read";
import type { SqlNode } from "../sqlite/schema";
import { runWrite } from "../sqlite/write";

export interface CommitInput {
  lsn: number;
  term: number;
  /** Byte position of the log's end before this record. */
  logEnd: number;
  statements: readonly Statement[];
  format: ResultFormat;
  key: string | undefined;
  requestHash: string;
  /** replicate_statement_min_rows (write.ts runWrite). */
  statementMinRows: number;
  /** log_record_max_bytes. */
  recordMaxBytes: number;
}

export interface Committed {
  response: ExecResponse;
  record: LogRecord;
  bytes: number;
  /** Size of the response as JSON text: what the waiter holds while it waits. */
  responseBytes: number;
}

export function commitLocal(
  storage: DurableObjectStorage,
  node: SqlNode,
  store: NodeStore,
  input: CommitInput,
): Committed {
  const ts = Date.now();
  try {
    return storage.transactionSync(() => {
      const budget = new ResultBudget();
      const limits = {
        statementMinRows: input.statementMinRows,
        record: new RecordBudget(input.recordMaxBytes),
      };
      const entries: LogEntry[] = [];
      const results: StatementResult[] = [];
      let wroteSequence = false;
      // A request is a connection of its own: its SQL reads its own counters.
      const counters = freshCounters();
      for (const statement of input.statements) {
        const outcome = runWrite(node, statement, budget, input.format, limits, counters);
        if (outcome.entry !== null) entries.push(outcome.entry);
        results.push(outcome.result);
        wroteSequence ||= outcome.wroteSequence;
      }
      const response: ExecResponse = {
        lsn: input.lsn,
        results,
        bookmark: encodeBookmark(input.lsn),
      };
      return appendCommit(
        node,
        store,
        input,
        ts,
        { entries, wroteSequence, response },
        limits.record,
      );
    });
  } catch (error) {
    // A DDL statement that ran before the failure reloaded the cache mid-transaction.
    node.schema.invalidate();
    throw error;
  }
}

/**
 * The record of a commit whose statements have run, and its saved result,
 * appended inside the same transaction. The saved result travels in the
 * record: every node keeps it (node-store.ts).
 */
export function appendCommit<R>(
  node: SqlNode,
  store: NodeStore,
  input: Pick<CommitInput, "lsn" | "term" | "logEnd" | "key" | "requestHash">,
  ts: number,
  ran: { entries: LogEntry[]; wroteSequence: boolean; response: R },
  budget: RecordBudget,
): { response: R; record: LogRecord; bytes: number; responseBytes: number } {
  const { entries, response } = ran;
  const sequence = ran.wroteSequence ? readSequence(node) : undefined;
  const text = JSON.stringify(response);
  const result =
    input.key === undefined
      ? undefined
      : { key: input.key, requestHash: input.requestHash, lsn: input.lsn, response: text };
  const body = encodeBody({
    entries,
    ...(sequence ? { sequence } : {}),
    ...(result ? { result } : {}),
  });
  const bytes = bodyBytes(body);
  budget.check(bytes);
  const head = { lsn: input.lsn, term: input.term, ts, end: input.logEnd + bytes };
  store.appendLog(head, body, bytes, entries);
  if (result !== undefined) store.saveResult(result, ts);
  const record: LogRecord = {
    ...head,
    entries,
    ...(sequence ? { sequence } : {}),
    ...(result ? { result } : {}),
  };
  return { response, record, bytes, responseBytes: text.length };
}

/** A record with no entries (a term's first record): it only takes its place in the log. */
export function commitEmpty(
  storage: DurableObjectStorage,
  node: SqlNode,
  store: NodeStore,
  at: { lsn: number; term: number; logEnd: number },
): Committed {
  return commitLocal(storage, node, store, {
    ...at,
    statements: [],
    format: "objects",
    key: undefined,
    requestHash: "",
    statementMinRows: 0,
    recordMaxBytes: Number.MAX_SAFE_INTEGER,
  });
}

/**
 * The newest log records in memory, for the relays' live sends, bounded by
 * count and by bytes: a commit of megabytes does not pin megabytes for long.
 */
export class LogTail {
  private readonly records = new Map<number, { record: LogRecord; bytes: number }>();
  private bytes = 0;

  constructor(
    private readonly maxRecords: () => number,
    private readonly maxBytes: () => number,
  ) {}

  add(record: LogRecord, bytes: number): void {
    this.records.set(record.lsn, { record, bytes });
    this.bytes += bytes;
    while (this.records.size > this.maxRecords() || this.bytes > this.maxBytes()) {
      const oldest = this.records.keys().next();
      if (oldest.done) break;
      this.drop(oldest.value);
    }
  }

  drop(lsn: number): void {
    const held = this.records.get(lsn);
    if (held === undefined) return;
    this.records.delete(lsn);
    this.bytes -= held.bytes;
  }

  /** Drops every record through `lsn` (truncated). */
  dropThrough(lsn: number): void {
    for (const at of [...this.records.keys()]) if (at <= lsn) this.drop(at);
  }

  /** Consecutive records from `fromLsn`, within the limits (at least one if held). */
  read(fromLsn: number, maxRecords: number, maxBytes: number): LogRecord[] {
    const out: LogRecord[] = [];
    let bytes = 0;
    for (let lsn = fromLsn; out.length < maxRecords; lsn++) {
      const held = this.records.get(lsn);
      if (held === undefined) break;
      if (out.length > 0 && bytes + held.bytes > maxBytes) break;
      bytes += held.bytes;
      out.push(held.record);
    }
    return out;
  }

  /** The term of a record held here, if it is. */
  termAt(lsn: number): number | undefined {
    return this.records.get(lsn)?.record.term;
  }

  get heldBytes(): number {
    return this.bytes;
  }
}
