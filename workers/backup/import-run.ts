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
import type { ImportBatchRequest, ImportBatchResponse } from "../../core/backup-protocol";
import { StatementSplitter, type SplitStatement } from "../../core/dump-splitter";
import { type DumpStatement, parseDumpStatement } from "../../core/dump-statement";
import { ApiError, type Result } from "../../core/errors";
import { type ImportBatch, ImportBatcher, type Span, ungrouped } from "../../core/import-batcher";
import { encodeBookmark } from "../../core/protocol";
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

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export class DumpImport {
  private readonly splitter = new StatementSplitter();
  private readonly batcher = new ImportBatcher();
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
        : (await sha256Hex(`import\u001f${cluster}\u001f${key}`)).slice(0, 40);
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
    for (const batch of this.batcher.finish()) await this.send(batch);
    // Even an empty dump is refused on a cluster that is not empty.
    if (this.sent === 0) {
      await this.send({ items: [], spans: [], groupings: [], rows: 0, bytes: 0 });
    }
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
      this.batcher.add({ statement, number: this.number, line });
      for (const batch of this.batcher.take()) await this.send(batch);
    }
  }

  private async send(batch: ImportBatch): Promise<void> {
    const request: ImportBatchRequest = {
      cluster: this.cluster,
      key: `import:${this.id}:${this.sent}`,
      requestHash: await batchHash(batch),
      first: this.sent === 0,
      items: batch.items,
    };
    const result = await this.commit(request);
    if (result.ok) {
      this.sent++;
      this.done.rows += batch.rows;
      this.through = Math.max(this.through, ...batch.spans.map((s) => s.last));
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
    const item = error.details?.item;
    const tooLarge = error.code === "PAYLOAD_TOO_LARGE";
    const grouping =
      typeof item === "number" ? batch.groupings[item] : tooLarge ? batch.groupings[0] : null;
    if (tooLarge && batch.items.length > 1) {
      // The batch's record is over log_record_max_bytes (a tunable): it goes in two halves.
      for (const half of halves(batch)) await this.send(half);
      return;
    }
    // A multi-row INSERT failed: sent again one row per statement, the failing one is named.
    if (grouping != null && grouping.rows.length > 1) return this.send(ungrouped(batch));
    const at = typeof item === "number" ? item : 0;
    const span = batch.spans[at] ?? { first: this.number, last: this.number, line: 0 };
    const failed = batch.items[at];
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

  private committed(): string {
    if (this.through === 0) return "nothing was committed";
    return `statements 1-${this.through} are committed, through LSN ${this.done.lsn}`;
  }

  private details(): Record<string, unknown> {
    return {
      committed: { lsn: this.done.lsn, statements: this.through, rows: this.done.rows },
    };
  }

  private failure(error: ApiError, span: Span, sql: string): ApiError {
    const which =
      span.first === span.last
        ? `statement ${span.first}`
        : `statements ${span.first}-${span.last}`;
    const next =
      this.through === 0
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

/** What a retry of the batch must match: every item, values exact. */
async function batchHash(batch: ImportBatch): Promise<string> {
  const parts = batch.items.map((item) => {
    if (item.kind === "sql")
      return `q\u001f${item.sql}\u001f${item.params.map(encodeCell).join("\u001f")}`;
    if (item.kind === "sequence") return `s\u001f${item.name}\u001f${item.seq}`;
    return "r";
  });
  return sha256Hex(parts.join("\u001e"));
}

function halves(batch: ImportBatch): ImportBatch[] {
  const middle = Math.ceil(batch.items.length / 2);
  return [0, middle].map((from) => {
    const to = from === 0 ? middle : batch.items.length;
    const groupings = batch.groupings.slice(from, to);
    return {
      items: batch.items.slice(from, to),
      spans: batch.spans.slice(from, to),
      groupings,
      rows: groupings.reduce((n, g) => n + (g?.rows.length ?? 0), 0),
      bytes: Math.ceil(batch.bytes / 2),
    };
  });
}
