/**
 * A replica keeps what a master needs: every record it applies goes into its
 * own log with the master's LSN, term and byte position, a commit's saved
 * result inside it, in the batch's transaction. Its log follows the master's
 * truncation point (always keeping its newest record, which says where it is);
 * the results of the records it truncates are indexed by key first
 * (log-results.ts), and age out by the master's retention, so a promoted
 * replica answers a retry of a commit the old master acknowledged.
 */
import { bodyBytes, encodeBody, recordBody } from "../../core/log-codec";
import type { LogRecord } from "../../core/protocol";
import { indexLogResults } from "../log-results";
import type { NodeStore } from "../node-store";

/**
 * Log rows truncated per message at least. A step indexes each row's saved
 * result and deletes the row inside the message's call, which the replica's
 * ack waits behind, so steps stay short: 5,000 rows a step held acks back by
 * hundreds of ms (p99 of 256 clients at a 100 ms ack delay: 800 ms against
 * 320 with 256-row steps, bench:sweep). A step takes twice the records the
 * message brought when that is more, so truncation keeps up with any batch size.
 */
export const TRUNCATE_STEP_ROWS = 256;

/** Where one upkeep step truncates the log to, from `from` towards `target`. */
export function truncationStep(from: number, target: number, recordsBrought: number): number {
  return Math.min(target, from + Math.max(TRUNCATE_STEP_ROWS, 2 * recordsBrought));
}
const PRUNE_EVERY_MS = 60_000;
/** A pause in messages this long lets the rest of a truncation backlog go (queueRest). */
const QUIET_MS = 50;

export class LogKeeper {
  private truncatedThrough: number;
  private lastPruneAt = 0;
  /** Where the log is to be truncated to, as the latest message said (0: nowhere). */
  private target = 0;
  private retentionMs = 0;
  /** The rest of a backlog, due once messages pause (QUIET_MS). */
  private rest: ReturnType<typeof setTimeout> | null = null;
  /** Set when the node is deleted or changes role: no step may touch its storage after. */
  private stopped = false;
  /**
   * The newest record of a committed batch, so the log-matching check of the
   * next batch (which lands on it) needs no storage read: a read of a log key
   * brings its whole body back. Set only once the batch's transaction has
   * committed (committed), so a batch rolled back leaves nothing behind here.
   */
  private newest: { lsn: number; term: number } | null = null;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly store: NodeStore,
  ) {
    this.truncatedThrough = store.truncatedThrough();
  }

  /** The term of record `lsn` in this node's log (0 when it holds none there). */
  termAt(lsn: number): number {
    if (this.newest !== null && this.newest.lsn === lsn) return this.newest.term;
    return this.store.termAt(lsn);
  }

  /**
   * Within the batch's transaction: the records it applied, each in the log
   * (its saved result inside it: log-results.ts indexes it by key later).
   */
  keep(records: readonly LogRecord[]): void {
    for (const record of records) {
      const body = encodeBody(recordBody(record));
      this.store.appendLog(record, body, bodyBytes(body), record.entries);
    }
  }

  /** The batch that kept `records` committed: its last is this log's newest. */
  committed(records: readonly LogRecord[]): void {
    const last = records[records.length - 1];
    if (last !== undefined) this.newest = { lsn: last.lsn, term: last.term };
  }

  /** Where this log is truncated through now. */
  get through(): number {
    return this.truncatedThrough;
  }

  /** The node is being deleted or reset into a new role: steps end here. */
  stop(): void {
    this.stopped = true;
    if (this.rest !== null) clearTimeout(this.rest);
  }

  /** A snapshot was installed at `lsn`: the log starts after it. */
  restarted(lsn: number): void {
    this.truncatedThrough = lsn;
    this.target = 0;
    this.newest = null;
  }

  /**
   * Follows the master's truncation point one step per message (the message
   * brought `recordsBrought` records), and prunes saved results older than
   * `retentionMs` whose commit is at or below the commit point (a retry can no
   * longer find it waiting).
   */
  upkeep(
    masterTruncatedThrough: number,
    appliedLsn: number,
    retentionMs: number,
    commitPoint: number,
    recordsBrought = 0,
  ): void {
    this.target = Math.max(this.target, Math.min(masterTruncatedThrough, appliedLsn - 1));
    this.retentionMs = retentionMs;
    const now = Date.now();
    this.step(recordsBrought, now);
    // While messages come, each brings its step; the rest waits for a pause.
    this.queueRest(QUIET_MS);
    if (now - this.lastPruneAt < PRUNE_EVERY_MS) return;
    this.lastPruneAt = now;
    this.storage.transactionSync(() => this.store.pruneResults(now - retentionMs, commitPoint));
  }

  /**
   * The rest of a backlog follows once messages pause for QUIET_MS, a step a
   * turn: a master that goes quiet (scale to zero) sends no message to carry
   * it, and a backlog would stay until it woke (the master stays awake until
   * each replica says its log is truncated: core/idle.ts). Under load each
   * message's step keeps pace, and steps of their own would only compete with
   * the applies. A deletion or a role change stops them (stop): a step after
   * deleteAll wrote into the emptied object.
   */
  private queueRest(delayMs: number): void {
    if (this.rest !== null) clearTimeout(this.rest);
    this.rest = null;
    if (this.stopped || this.target <= this.truncatedThrough) return;
    this.rest = setTimeout(() => {
      this.rest = null;
      this.step(0, Date.now());
      this.queueRest(0);
    }, delayMs);
  }

  /** One step towards the target. */
  private step(recordsBrought: number, now: number): void {
    if (this.stopped || this.target <= this.truncatedThrough) return;
    const from = this.truncatedThrough;
    const through = truncationStep(from, this.target, recordsBrought);
    this.storage.transactionSync(() => {
      // Their results outlive them (idempotency_retention_ms): indexed by key first.
      indexLogResults(this.store, from, through, now - this.retentionMs);
      this.store.truncateLog(from, through);
    });
    this.truncatedThrough = through;
  }
}
