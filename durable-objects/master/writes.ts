/**
 * The master's write path: a request runs in one local transaction with its log
 * record and saved result (commit.ts), then waits in the waiter for the acks
 * its wait set owes (full sync) or is answered at once, as the commit policy
 * says. A retry with a known Idempotency-Key is answered from the saved result,
 * after the same wait. Also the replica-facing calls of the master: deferred
 * acks and catch-up pulls, and the master's own reads.
 */
import type { Outcome } from "../../core/ack-book";
import type { ImportBatchRequest, ImportBatchResponse } from "../../core/backup-protocol";
import { planWait } from "../../core/commit-policy";
import { ApiError, fail, ok, type Result } from "../../core/errors";
import type { ProgramRequest, ProgramResponse } from "../../core/hrana/program";
import type {
  AckRequest,
  ExecRequest,
  ExecResponse,
  LogRecord,
  PullRequest,
  PullResponse,
  QueryRequest,
  QueryResponse,
  SavedResult,
} from "../../core/protocol";
import { runQuery } from "../sqlite/query";
import { asSqlError } from "../sqlite/sql-errors";
import { commitLocal } from "./commit";
import type { MasterCore } from "./core";
import { commitImport } from "./import-commit";
import { commitProgram } from "./program-commit";
import { asAck } from "./relay-host";

const PULL_MAX_BYTES = 4_000_000;

export class MasterWrites {
  constructor(private readonly core: MasterCore) {}

  async exec(request: ExecRequest): Promise<Result<ExecResponse>> {
    try {
      return await this.write(request.cluster, request.idempotencyKey, request.requestHash, () =>
        this.commit(request, request.idempotencyKey, request.requestHash ?? ""),
      );
    } catch (error) {
      const mapped = asSqlError(error);
      if (mapped instanceof ApiError) return this.failed(this.forRoute(mapped, request));
      throw error;
    }
  }

  /**
   * A libSQL pipeline's program: one local transaction and at most one
   * record, through the same slots, waiter and saved results as exec. A
   * program that wrote nothing only read: it answers as a strong read does,
   * once the state it read is acknowledged.
   */
  async program(request: ProgramRequest): Promise<Result<ProgramResponse>> {
    try {
      const readAt = Date.now();
      const result = await this.write(
        request.cluster,
        request.idempotencyKey,
        request.requestHash,
        () => {
          const lsn = this.core.lsn + 1;
          const done = commitProgram(this.core.ctx.storage, this.core.node, this.core.store, {
            lsn,
            term: this.core.term,
            logEnd: this.core.logEnd,
            key: request.idempotencyKey,
            requestHash: request.requestHash ?? "",
            statementMinRows: this.core.tunables.replicate_statement_min_rows,
            recordMaxBytes: this.core.tunables.log_record_max_bytes,
            request,
          });
          if (done.record === null) return { response: done.response, plain: true, bytes: 0 };
          return this.committed(done.record, done.bytes, done.response, done.responseBytes);
        },
      );
      if (result.ok && result.value.lsn === null) {
        await this.core.strongReads.settle(this.core.lsn, readAt);
      }
      return result;
    } catch (error) {
      const mapped = asSqlError(error);
      if (mapped instanceof ApiError) return this.failed(mapped);
      throw error;
    }
  }

  /**
   * One batch of an import (import-commit.ts): a commit like exec's, through
   * the same slots, saved results and waiter, under the batch's own key.
   */
  async importBatch(request: ImportBatchRequest): Promise<Result<ImportBatchResponse>> {
    const store = this.core.store;
    if (request.startedWith !== undefined && !store.hasResultUnder(request.startedWith)) {
      return this.failed(
        new ApiError(
          "NOT_FOUND",
          "this import's first batch is not on the cluster: it was deleted and created anew since the import began; start the import again",
        ),
      );
    }
    if (store.findResult(request.key) === null && store.hasResultUnder(`${request.key}.`)) {
      // Sent again by a resumed import: the first time it was over log_record_max_bytes and
      // went in parts (workers/backup/import-run.ts), which are what must be replayed.
      return this.failed(
        new ApiError("PAYLOAD_TOO_LARGE", "this import batch went in parts: send its parts", {
          split: true,
        }),
      );
    }
    try {
      return await this.write(request.cluster, request.key, request.requestHash, () => {
        const done = commitImport(this.core.ctx.storage, this.core.node, this.core.store, {
          lsn: this.core.lsn + 1,
          term: this.core.term,
          logEnd: this.core.logEnd,
          key: request.key,
          requestHash: request.requestHash,
          statementMinRows: this.core.tunables.replicate_statement_min_rows,
          recordMaxBytes: this.core.tunables.log_record_max_bytes,
          first: request.first,
          items: request.items,
          holdable: request.holdable ?? [],
          resolve: request.resolve ?? false,
        });
        if (done.record === null) return { response: done.response, plain: true, bytes: 0 };
        return this.committed(done.record, done.bytes, done.response, done.responseBytes);
      });
    } catch (error) {
      const mapped = asSqlError(error);
      if (mapped instanceof ApiError) return this.failed(mapped);
      throw error;
    }
  }

  /**
   * A write's course: a retry answered from its saved result, a writer slot,
   * the local commit, then the wait the commit policy plans. `commit` returns
   * a response whose `lsn` is null when nothing was committed (no wait then).
   */
  private async write<R extends { lsn: number | null }>(
    cluster: string,
    key: string | undefined,
    requestHash: string | undefined,
    commit: () => { response: R; plain: boolean; bytes: number },
  ): Promise<Result<R>> {
    this.core.ensureCluster(cluster);
    const refused = this.core.writeRefusal();
    if (refused !== null) return this.failed(refused);
    const hash = requestHash ?? "";
    // A retry is looked up before anything else runs: a commit the guard would
    // refuse today (after a deploy) is still answered with its saved result.
    if (key !== undefined) {
      const saved = this.core.store.findResult(key);
      if (saved !== null) return await this.replay<R>(saved, hash);
    }
    // Only a request that queued for its slot can find its key committed meanwhile.
    const queued = !this.core.writers.tryAcquire();
    if (queued) await this.core.writers.acquire();
    let holding = true;
    try {
      // A handover may have begun while this request queued for a slot.
      const late = this.core.writeRefusal();
      if (late !== null) return this.failed(late);
      if (key !== undefined && queued) {
        // A duplicate may have committed while this request queued for a slot.
        const saved = this.core.store.findResult(key);
        if (saved !== null) {
          this.core.writers.release();
          holding = false;
          return await this.replay<R>(saved, hash);
        }
      }
      const { response, plain, bytes } = commit();
      if (response.lsn === null) return ok(response);
      const plan = planWait({
        syncMode: this.core.tunables.sync_mode,
        asyncDistCommit: this.core.tunables.async_dist_commit,
        maxOutstanding: this.core.tunables.async_dist_commit_max_outstanding,
        handedOffNow: this.core.waiter.handedOffNow + this.core.waiter.replaysNow,
        plain,
        heldBytes: this.core.waiter.heldBytes,
        bytes,
        maxHeldBytes: this.core.tunables.waiter_max_held_bytes,
      });
      if (plan.kind === "no-wait") {
        this.core.counters.noWait++;
        if (response.lsn > this.core.answeredHighLsn) this.core.answeredHighLsn = response.lsn;
        return ok(response);
      }
      if (plan.kind === "inline") {
        this.core.counters.inlineWaits[plan.reason]++;
        this.core.metrics.inlineWaits.inc({ cluster: this.core.cluster, reason: plan.reason });
      } else {
        this.core.counters.handedOff++;
        this.core.metrics.handoffs.inc({ cluster: this.core.cluster });
        this.core.writers.release();
        holding = false;
      }
      const outcome = await this.core.waitFor(response.lsn, plan.kind, bytes);
      return this.answer(outcome, response, response.lsn);
    } finally {
      if (holding) this.core.writers.release();
    }
  }

  private failed<T>(error: ApiError): Result<T> {
    this.core.metrics.errors.inc({ cluster: this.core.cluster, code: error.code });
    return fail(error);
  }

  private forRoute(error: ApiError, request: ExecRequest): ApiError {
    if (request.kind === "rows" && /no such table/i.test(error.message)) {
      return new ApiError("NOT_FOUND", error.message.replace(/^.*no such table/i, "no such table"));
    }
    return error;
  }

  private async replay<R>(saved: SavedResult, hash: string): Promise<Result<R>> {
    if (saved.requestHash !== hash) {
      return this.failed(
        new ApiError(
          "IDEMPOTENCY_KEY_REUSED",
          "this Idempotency-Key was used with a different request body",
        ),
      );
    }
    this.core.counters.replayed++;
    this.core.metrics.replayed.inc({ cluster: this.core.cluster });
    const response = JSON.parse(saved.response) as R;
    const bytes = saved.response.length;
    const full =
      this.core.waiter.handedOffNow + this.core.waiter.replaysNow >=
        this.core.tunables.async_dist_commit_max_outstanding ||
      this.core.waiter.heldBytes + bytes > this.core.tunables.waiter_max_held_bytes;
    // A replay of a commit that may still wait holds its response in the waiter too:
    // past the waiter's caps it is turned away rather than held.
    if (full && saved.lsn > this.core.answeredHighLsn) {
      return this.failed(
        new ApiError("UNAVAILABLE", "the waiter holds as many answers as it may; retry", {
          retryAfterSeconds: 1,
        }),
      );
    }
    const outcome =
      this.core.tunables.sync_mode === "none"
        ? "acked"
        : await this.core.waitFor(saved.lsn, "replay", bytes);
    return this.answer(outcome, { ...response, replayed: true }, saved.lsn);
  }

  private answer<R>(outcome: Outcome, response: R, lsn: number): Result<R> {
    if (outcome === "acked") return ok(response);
    if (outcome === "not-durable") {
      return this.failed(
        new ApiError(
          "NOT_DURABLE",
          "the commit was not acknowledged by a majority of the cluster in time; retry with the same Idempotency-Key",
          { lsn, retryAfterSeconds: 1 },
        ),
      );
    }
    return this.failed(
      new ApiError(
        "COMMIT_TIMEOUT",
        "the commit is written on the master but was not acknowledged in time; retry with the same Idempotency-Key",
        { lsn },
      ),
    );
  }

  /** Runs the statements, appends the log record and saves the result: one transaction. */
  private commit(
    request: ExecRequest,
    key: string | undefined,
    hash: string,
  ): { response: ExecResponse; plain: boolean; bytes: number } {
    const { response, record, bytes, responseBytes } = commitLocal(
      this.core.ctx.storage,
      this.core.node,
      this.core.store,
      {
        lsn: this.core.lsn + 1,
        term: this.core.term,
        logEnd: this.core.logEnd,
        statements: request.statements,
        format: request.format ?? "objects",
        key,
        requestHash: hash,
        statementMinRows: this.core.tunables.replicate_statement_min_rows,
        recordMaxBytes: this.core.tunables.log_record_max_bytes,
      },
    );
    return this.committed(record, bytes, response, responseBytes);
  }

  /** A record committed locally: it takes its LSN and goes to the relays. */
  private committed<R>(
    record: LogRecord,
    bytes: number,
    response: R,
    responseBytes: number,
  ): { response: R; plain: boolean; bytes: number } {
    this.core.lsn = record.lsn;
    this.core.logEnd += bytes;
    this.core.counters.commits++;
    this.core.metrics.commits.inc({ cluster: this.core.cluster });
    this.core.tail.add(record, bytes);
    for (const entry of this.core.replicas.all()) entry.relay.pump();
    return {
      response,
      plain: record.entries.every((e) => e.kind !== "ddl"),
      bytes: responseBytes,
    };
  }

  /** A replica's deferred ack (debug_ack_delay_ms). */
  async ack(request: AckRequest): Promise<void> {
    this.core.ensureCluster(request.cluster);
    // Held across a change of master, an ack may count LSNs of an older log.
    if (request.term !== this.core.term) return;
    this.core.replicas.get(request.replicaId)?.relay.receiveAck(asAck(request));
  }

  /** A replica catching up fetches the next records; its `fromLsn` acks everything before. */
  async pullLog(request: PullRequest): Promise<PullResponse> {
    this.core.ensureCluster(request.cluster);
    const entry = this.core.replicas.get(request.replicaId);
    if (entry === undefined) throw new Error(`no replica ${request.replicaId}`);
    entry.relay.pullBatches++;
    if (request.fromLsn <= this.core.truncatedThrough) {
      this.core.requestSnapshot(entry.id);
      return { records: [], masterLsn: this.core.lsn, caughtUp: false, snapshot: true };
    }
    entry.relay.noteApplied(request.fromLsn - 1);
    this.core.replicas.onAck(entry.id, 0, false, 0);
    const maxRecords = Math.max(1, Math.min(request.maxRecords, 10_000));
    const records = this.core.store.readLog(request.fromLsn, maxRecords, PULL_MAX_BYTES);
    const through = records[records.length - 1]?.lsn ?? request.fromLsn - 1;
    const caughtUp = through >= this.core.lsn;
    if (caughtUp) entry.relay.resumeLive(through);
    const prevTerm = this.core.store.termAt(request.fromLsn - 1);
    return { records, prevTerm, masterLsn: this.core.lsn, caughtUp };
  }

  async query(request: QueryRequest): Promise<Result<QueryResponse>> {
    try {
      this.core.ensureCluster(request.cluster);
      const readAt = Date.now();
      const result = runQuery(
        this.core.node,
        request.sql,
        request.params,
        request.format,
        request.counters,
      );
      // The rows are the state at this LSN; a strong read answers once it is acknowledged.
      const appliedLsn = this.core.lsn;
      if (request.consistency === "strong") {
        await this.core.strongReads.settle(appliedLsn, readAt);
      }
      return ok({ ...result, servedBy: "master", appliedLsn });
    } catch (error) {
      if (error instanceof ApiError) return fail(error);
      throw error;
    }
  }
}
