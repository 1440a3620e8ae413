/**
 * A replica's batch: records applied strictly in LSN order, all in one
 * transaction, each kept in the replica's own log. Records it already has
 * are skipped; a record past its next LSN ends the batch (a gap: the relay
 * resends from the replica's position). A record whose effects differ from
 * the master's rolls the whole batch back: the replica diverged.
 */
import type { LogRecord } from "../../core/protocol";
import { BatchApplier, asDivergence, isForeignKeyError } from "../sqlite/apply";
import type { SqlNode } from "../sqlite/schema";
import type { LogKeeper } from "./log-keeper";

export interface BatchHost {
  storage: DurableObjectStorage;
  node: SqlNode;
  log: LogKeeper;
  /** Fault hook: abort partway through this batch. */
  crashMidBatch: boolean;
  abort(reason: string): void;
}

export interface BatchOutcome {
  gap: boolean;
  skipped: number;
  applied: number;
  diverged: { lsn: number; detail: string; message: string } | null;
}

/**
 * Raft's log matching, at the one place a batch meets this node's log: the
 * last record of the batch this node already has, or else the record just
 * before the batch. Same LSN and same term there means the same log up to
 * there (each term's log is one master's); another term means this node holds
 * records the master does not have (an older master's tail, under a term it
 * missed), and it must be rebuilt. A record whose term this node no longer
 * knows (truncated) is not compared.
 */
export function logMismatch(
  log: { termAt(lsn: number): number },
  records: readonly LogRecord[],
  prevTerm: number | undefined,
  appliedLsn: number,
): { lsn: number; detail: string } | null {
  const first = records[0];
  const last = records[records.length - 1];
  if (first === undefined || last === undefined) return null;
  let at: number;
  let masterTerm: number;
  if (first.lsn <= appliedLsn) {
    const overlap = records[Math.min(appliedLsn, last.lsn) - first.lsn];
    if (overlap === undefined) return null;
    at = overlap.lsn;
    masterTerm = overlap.term;
  } else if (first.lsn === appliedLsn + 1 && prevTerm !== undefined && prevTerm > 0) {
    at = appliedLsn;
    masterTerm = prevTerm;
  } else {
    return null;
  }
  const mine = log.termAt(at);
  if (mine === 0 || mine === masterTerm) return null;
  return {
    lsn: at,
    detail: `the record at LSN ${at} is of term ${mine} here and of term ${masterTerm} on the master: this node holds a log the master does not`,
  };
}

export function applyRecords(
  host: BatchHost,
  records: readonly LogRecord[],
  appliedLsn: number,
): BatchOutcome {
  let failure: unknown;
  try {
    return { ...inTransaction(host, records, appliedLsn, false), diverged: null };
  } catch (error) {
    failure = error;
    host.node.schema.invalidate();
  }
  if (isForeignKeyError(failure)) {
    // The master's rows satisfied every foreign key when it committed; applied
    // one by one, in its capture order, they may not at each step between. Only
    // then are the checks deferred to the commit: the pragma expires every
    // prepared statement, which must not happen on every batch.
    try {
      return { ...inTransaction(host, records, appliedLsn, true), diverged: null };
    } catch (retried) {
      failure = retried;
      host.node.schema.invalidate();
    }
  }
  const diverged = asDivergence(failure, records);
  if (diverged === null) throw failure;
  return {
    gap: false,
    skipped: 0,
    applied: 0,
    diverged: { lsn: diverged.lsn, detail: diverged.detail, message: diverged.message },
  };
}

function inTransaction(
  host: BatchHost,
  records: readonly LogRecord[],
  appliedLsn: number,
  deferForeignKeys: boolean,
): { gap: boolean; skipped: number; applied: number } {
  let skipped = 0;
  let applied = 0;
  let gap = false;
  const kept: LogRecord[] = [];
  host.storage.transactionSync(() => {
    if (deferForeignKeys) host.node.sql.exec("PRAGMA defer_foreign_keys = ON").toArray();
    const applier = new BatchApplier(host.node);
    for (const record of records) {
      if (record.lsn <= appliedLsn + applied) {
        skipped++;
        continue;
      }
      if (record.lsn !== appliedLsn + applied + 1) {
        gap = true;
        break;
      }
      applier.apply(record);
      kept.push(record);
      applied++;
      if (host.crashMidBatch && applied * 2 >= records.length) {
        host.abort(
          `crashed mid-batch through the fault route, ${applied} of ${records.length} records applied`,
        );
      }
    }
    host.log.keep(kept);
    applier.finish();
  });
  host.log.committed(kept);
  return { gap, skipped, applied };
}
