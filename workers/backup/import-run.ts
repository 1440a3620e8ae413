/**
 * POST …/import: a dump read from the request body as it arrives, statement
 * by statement (core/dump-splitter.ts, core/dump-statement.ts), grouped into
 * batches (core/import-batcher.ts), each batch one commit on the master under
 * its own idempotency key, full sync and the guard as any write, sent one
 * after the other. Memory holds one batch, whatever the dump's size.
 *
 * A retry of a batch (the master restarted, a commit not yet durable) is
 * answered from its saved result, never run twice. The keys derive from the
 * request's Idempotency-Key when it has one, so sending the same dump again
 * with the same key resumes: the batches already committed are answered from
 * their results, and the first batch does not meet a cluster that is no longer
 * empty. A statement that fails stops the import with a 400 naming it; what
 * the batches before it committed stays (docs/operations.md).
 */
import {
  type ImportBatchRequest,
  type ImportBatchResponse,
  importBatchKey,
} from "../../core/backup-protocol";
import { type SplitStatement, StatementSplitter } from "../../core/dump-splitter";
import { type DumpStatement, parseDumpStatement } from "../../core/dump-statement";
import { ApiError, type Result } from "../../core/errors";
import { type HeldRow, HeldRows, mayPassHeldRows, rowOf, withHeldRows } from "../../core/held-rows";
import {
  emptyBatch,
  halves,
  type ImportBatch,
  ImportBatcher,
  type Span,
  ungrouped,
} from "../../core/import-batcher";
import { encodeBookmark } from "../../core/protocol";
import { sha256Hex } from "../../core/sha256";
import { encodeCell } from "../../core/sql-value";
import { onMaster } from "../cluster";
import { toApiError } from "../errors";

export interface ImportSummary {
  lsn: number | null;
  bookmark: string | null;
  statements: number;
  skipped: number;
  rows: number;
  batches: number;
}

/** A batch that meets a restarting master or a commit not yet durable is sent again for this long. */
const RETRY_FOR_MS = 30_000;
const RETRYABLE = new Set(["UNAVAILABLE", "NOT_DURABLE", "COMMIT_TIMEOUT"]);

export class DumpImport {
  private readonly splitter = new StatementSplitter();
  private readonly batcher = new ImportBatcher();
  /** Row INSERTs waiting for a parent row later in the dump (core/held-rows.ts). */
  private readonly held = new HeldRows();
  private number = 0;
  private sent = 0;
  private readonly done: ImportSummary = {
    lsn: null,
    bookmark: null,
    statements: 0,
    skipped: 0,
    rows: 0,
    batches: 0,
  };
  /** The last statement of the dump that a committed batch holds. */
  private through = 0;
  /** The first statement of the rows held back, which are not committed yet. */
  private waitingFrom: number | null = null;
  /** The dump's own BEGIN TRANSACTION, not yet closed by its COMMIT. */
  private open: { number: number; line: number } | null = null;

  private constructor(
    private readonly env: Env,
    private readonly cluster: string,
    private readonly id: string,
  ) {}

  static async start(env: Env, cluster: string, key: string | undefined): Promise<DumpImport> {
    const id =
      key === undefined
        ? crypto.randomUUID()
        : sha256Hex(`import\u001f${cluster}\u001f${key}`).slice(0, 40);
    return new DumpImport(env, cluster, id);
  }

  async run(body: ReadableStream<Uint8Array> | null): Promise<ImportSummary> {
    if (body !== null) {
      const reader = body.pipeThrough(new TextDecoderStream("utf-8", { fatal: true })).getReader();
      for (;;) {
        let chunk: ReadableStreamReadResult<string>;
        try {
          chunk = await reader.read();
        } catch (error) {
          throw new ApiError(
            "BAD_REQUEST",
            `the dump is not UTF-8 text (${this.committed()})`,
            this.details(),
            error,
          );
        }
        if (chunk.done) break;
        await this.statements(this.splitter.push(chunk.value));
      }
    }
    await this.statements(this.splitter.finish());
    if (this.open !== null) {
      // An export that failed midway stops before its COMMIT: its last batch is not sent.
      const span = { first: this.open.number, last: this.open.number, line: this.open.line };
      const cut = new ApiError(
        "BAD_REQUEST",
        "the dump begins a transaction it never commits: it was cut short (an export that failed ends so)",
      );
      throw this.failure(cut, span, "");
    }
    await this.flush();
    // Even an empty dump is refused on a cluster that is not empty.
    if (this.sent === 0) await this.send(emptyBatch());
    this.done.statements = this.number;
    return this.done;
  }

  private async statements(list: readonly SplitStatement[]): Promise<void> {
    for (const { text, line } of list) {
      this.number++;
      let statement: DumpStatement;
      try {
        statement = parseDumpStatement(text);
      } catch (error) {
        throw this.failure(
          toApiError(error),
          { first: this.number, last: this.number, line },
          text,
        );
      }
      if (statement.kind === "skip") {
        this.done.skipped++;
        if (statement.transaction === "begin") this.open = { number: this.number, line };
        if (statement.transaction === "commit") this.open = null;
      }
      // A statement whose effect depends on which rows are in waits for the rows held.
      if (this.held.size > 0 && !mayPassHeldRows(statement)) await this.flush();
      this.batcher.add({ statement, number: this.number, line });
      for (const batch of this.batcher.take()) await this.send(batch);
    }
  }

  /** Sends every statement read so far, and with the last batch the rows held, which must go in. */
  private async flush(): Promise<void> {
    const batches = this.batcher.finish();
    if (this.held.size > 0 && batches.length === 0) batches.push(emptyBatch());
    const last = batches[batches.length - 1];
    if (last !== undefined) last.resolve = true;
    for (const batch of batches) await this.send(batch);
  }

  /**
   * Sends a batch, with the rows held back among its items unless `alone`,
   * under its slot's key: the next one for a batch of the dump, one derived
   * from it for its halves, so that a resumed import splits and replays alike.
   */
  private async send(unheld: ImportBatch, alone = false, slot?: Slot): Promise<void> {
    const at = slot ?? { key: importBatchKey(this.id, this.sent), first: this.sent === 0 };
    await this.sendAt(unheld, alone, at);
    if (slot === undefined) this.sent++;
  }

  private async sendAt(unheld: ImportBatch, alone: boolean, at: Slot): Promise<void> {
    const heldRows = alone ? [] : this.held.take();
    const batch = withHeldRows(unheld, heldRows);
    const holdable = batch.groupings.flatMap((g, i) =>
      g == null ? [] : [{ item: i, rows: g.rows.length }],
    );
    const resolve = batch.resolve === true;
    const request: ImportBatchRequest = {
      cluster: this.cluster,
      key: at.key,
      requestHash: batchHash(batch, holdable, resolve),
      first: at.first,
      ...(at.first ? {} : { startedWith: importBatchKey(this.id, 0) }),
      items: batch.items,
      holdable,
      resolve,
    };
    const result = await this.commit(request);
    if (result.ok) {
      const held = result.value.held ?? [];
      for (const { item, row } of held) this.held.hold([rowOf(batch, item, row)]);
      this.done.rows += batch.rows - held.length;
      const waiting = new Set(held.map((h) => h.item));
      const committed = batch.spans.filter((_, i) => !waiting.has(i)).map((s) => s.last);
      this.through = Math.max(this.through, ...committed);
      this.waitingFrom = this.held.firstStatement();
      if (result.value.lsn !== null) {
        this.done.batches++;
        this.done.lsn = result.value.lsn;
        this.done.bookmark = encodeBookmark(result.value.lsn);
      }
      return;
    }
    const error = ApiError.fromBody(result.error);
    // Refused before anything ran: the answer is the master's own.
    if (error.code === "NOT_EMPTY") throw error;
    // Only a batch that rolled back (a statement failed, or its record was too large) may be
    // sent again in another shape under its key: a commit not yet durable keeps its result there.
    if (RETRYABLE.has(error.code)) {
      // Still unanswered after RETRY_FOR_MS: the batch may yet commit, so it is never sent
      // again in another shape under its key; the same dump and key resume it later.
      const first = batch.spans[0] ?? { first: this.number, last: this.number, line: 0 };
      const last = batch.spans[batch.spans.length - 1] ?? first;
      throw this.failure(error, { first: first.first, last: last.last, line: first.line }, "");
    }
    if (error.code === "PAYLOAD_TOO_LARGE") return this.tooLarge(unheld, heldRows, error, at);
    const item = typeof error.details?.item === "number" ? error.details.item : 0;
    const row = error.details?.row;
    const grouping = batch.groupings[item];
    if (grouping != null && grouping.rows.length > 1) {
      // A multi-row INSERT failed: sent again one row per statement, the failing one is named.
      if (typeof row !== "number") return this.sendAt(ungrouped(batch), true, at);
      const one = rowOf(batch, item, row);
      throw this.failure(withoutItem(error), one.span, one.item.kind === "sql" ? one.item.sql : "");
    }
    const span = batch.spans[item] ?? { first: this.number, last: this.number, line: 0 };
    const failed = batch.items[item];
    throw this.failure(withoutItem(error), span, failed?.kind === "sql" ? failed.sql : "");
  }

  /**
   * A batch whose record is over log_record_max_bytes (a tunable): in halves,
   * a multi-row INSERT row by row, the rows held apart from the batch. Every
   * part commits under a key derived from the batch's, and the choice depends
   * on the batch alone, so that a resumed import (told by the master that the
   * batch went in parts) makes the same parts and replays them.
   */
  private async tooLarge(
    unheld: ImportBatch,
    heldRows: HeldRow[],
    error: ApiError,
    at: Slot,
  ): Promise<void> {
    const part = (n: number, first: boolean): Slot => ({ key: `${at.key}.${n}`, first });
    if (unheld.items.length > 1) {
      this.held.hold(heldRows);
      const [first, second] = halves(unheld);
      if (first !== undefined) await this.send(first, false, part(0, at.first));
      if (second !== undefined) await this.send(second, false, part(1, false));
      return;
    }
    const grouping = unheld.groupings[0];
    if (grouping != null && grouping.rows.length > 1) {
      return this.tooLarge(ungrouped(unheld), heldRows, error, at);
    }
    if (heldRows.length > 0 && unheld.items.length > 0) {
      // The batch's one statement alone; the rows held wait for the next batch, or go in
      // on their own when this one was to let them in.
      this.held.hold(heldRows);
      await this.send({ ...unheld, resolve: false }, true, part(0, at.first));
      if (unheld.resolve === true)
        await this.send({ ...emptyBatch(), resolve: true }, false, part(1, false));
      return;
    }
    if (heldRows.length > 0) {
      const first = heldRows[0]?.span ?? { first: this.number, last: this.number, line: 0 };
      const why = new ApiError(
        "PAYLOAD_TOO_LARGE",
        `${heldRows.length} rows waited for parent rows later in the dump and must go in one ` +
          `commit, which is over log_record_max_bytes (${String(error.details?.maxBytes)}): raise ` +
          "it for the import, or order the dump's rows so that parent rows come first",
        { held: heldRows.length, maxBytes: error.details?.maxBytes },
      );
      throw this.failure(why, first, "");
    }
    const span = unheld.spans[0] ?? { first: this.number, last: this.number, line: 0 };
    const failed = unheld.items[0];
    throw this.failure(withoutItem(error), span, failed?.kind === "sql" ? failed.sql : "");
  }

  private async commit(request: ImportBatchRequest): Promise<Result<ImportBatchResponse>> {
    const until = Date.now() + RETRY_FOR_MS;
    for (let attempt = 0; ; attempt++) {
      let result: Result<ImportBatchResponse>;
      try {
        result = (await onMaster(this.env, this.cluster, (master) =>
          master.importBatch(request),
        )) as Result<ImportBatchResponse>;
      } catch (error) {
        result = { ok: false, error: toApiError(error).toBody() };
      }
      if (result.ok || !RETRYABLE.has(result.error.code) || Date.now() >= until) return result;
      await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 50 * 2 ** attempt)));
    }
  }

  /** Every statement up to this one is committed: not past a row still waiting for its parent. */
  private committedThrough(): number {
    return this.waitingFrom === null ? this.through : Math.min(this.through, this.waitingFrom - 1);
  }

  private committed(): string {
    const through = this.committedThrough();
    if (through <= 0) {
      return this.done.lsn === null
        ? "nothing was committed"
        : `through LSN ${this.done.lsn} (rows only)`;
    }
    return `statements 1-${through} are committed, through LSN ${this.done.lsn}`;
  }

  private details(): Record<string, unknown> {
    return {
      committed: {
        lsn: this.done.lsn,
        statements: Math.max(0, this.committedThrough()),
        rows: this.done.rows,
      },
    };
  }

  private failure(error: ApiError, span: Span, sql: string): ApiError {
    const which =
      span.first === span.last
        ? `statement ${span.first}`
        : `statements ${span.first}-${span.last}`;
    const next =
      this.done.lsn === null
        ? "nothing was committed"
        : `${this.committed()}; send the dump again with the same Idempotency-Key to resume after fixing it, or import into a new cluster`;
    return new ApiError(
      error.code,
      `${which} of the dump (line ${span.line}) failed: ${error.message} (${next})`,
      {
        ...error.details,
        statement: span.first,
        line: span.line,
        ...(sql === "" ? {} : { sql: sql.length > 200 ? `${sql.slice(0, 200)}…` : sql }),
        ...this.details(),
      },
      error,
    );
  }
}

function withoutItem(error: ApiError): ApiError {
  const { item: _, ...details } = error.details ?? {};
  return new ApiError(error.code, error.message, details);
}

/** The key a batch (or half of one) commits under, and whether it is the import's first commit. */
interface Slot {
  key: string;
  first: boolean;
}

/** What a retry of the batch must match: every item, values exact, and what may wait. */
function batchHash(
  batch: ImportBatch,
  holdable: ImportBatchRequest["holdable"],
  resolve: boolean,
): string {
  const parts = batch.items.map((item) => {
    if (item.kind === "sql")
      return `q\u001f${item.sql}\u001f${item.params.map(encodeCell).join("\u001f")}`;
    if (item.kind === "sequence") return `s\u001f${item.name}\u001f${item.seq}`;
    return "r";
  });
  const waits = holdable.map((h) => `${h.item}:${h.rows}`).join(",");
  parts.push(`h\u001f${waits}\u001f${resolve ? 1 : 0}`);
  return sha256Hex(parts.join("\u001e"));
}
