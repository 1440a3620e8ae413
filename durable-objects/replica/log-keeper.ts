/**
 * A replica keeps what a master needs: every record it applies goes into its
 * own log with the master's LSN, term and byte position, and a commit's saved
 * result with it, in the batch's transaction. Its log follows the master's
 * truncation point (always keeping its newest record, which says where it is),
 * and saved results age out by the master's retention, so a promoted replica
 * answers a retry of a commit the old master acknowledged.
 */
import { bodyBytes, encodeBody, recordBody } from "../../core/log-codec";
import type { LogRecord } from "../../core/protocol";
import type { NodeStore } from "../node-store";

/** Log rows deleted per step, so one step never blocks the replica for long. */
const TRUNCATE_CHUNK_ROWS = 5_000;
const PRUNE_EVERY_MS = 60_000;

export class LogKeeper {
  private truncatedThrough: number;
  private lastPruneAt = 0;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly store: NodeStore,
  ) {
    this.truncatedThrough = store.truncatedThrough();
  }

  /** Within the batch's transaction. */
  keep(record: LogRecord): void {
    const body = encodeBody(recordBody(record));
    this.store.appendLog(record, body, bodyBytes(body), record.entries);
    if (record.result !== undefined) this.store.saveResult(record.result, record.ts);
  }

  /** A snapshot was installed at `lsn`: the log starts after it. */
  restarted(lsn: number): void {
    this.truncatedThrough = lsn;
  }

  /**
   * Follows the master's truncation point one chunk at a time, and prunes saved
   * results older than `retentionMs` whose commit is at or below the commit
   * point (a retry can no longer find it waiting).
   */
  upkeep(
    masterTruncatedThrough: number,
    appliedLsn: number,
    retentionMs: number,
    commitPoint: number,
  ): void {
    const target = Math.min(masterTruncatedThrough, appliedLsn - 1);
    if (target > this.truncatedThrough) {
      const from = this.truncatedThrough;
      const through = Math.min(target, from + TRUNCATE_CHUNK_ROWS);
      this.storage.transactionSync(() => this.store.truncateLog(from, through));
      this.truncatedThrough = through;
    }
    const now = Date.now();
    if (now - this.lastPruneAt < PRUNE_EVERY_MS) return;
    this.lastPruneAt = now;
    this.storage.transactionSync(() => this.store.pruneResults(now - retentionMs, commitPoint));
  }
}
