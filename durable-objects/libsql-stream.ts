/**
 * One libSQL stream that outlives its HTTP request: the SQL texts it stored
 * and the transaction it has open (replayed on each request, see
 * core/hrana/program.ts). It keeps them in its own storage, since the platform
 * may evict an idle object within seconds, and an alarm deletes them once the
 * stream has been idle for STREAM_IDLE_MS; its baton then gets a clear error.
 * Each baton number is taken once; the request it last answered may be sent
 * again (a retry after a lost response) and gets the same answer. A request
 * that failed for the cluster's reasons under an Idempotency-Key leaves the
 * stream as it was, so its retry runs again and the master answers it from
 * the saved result if it committed.
 */
import { freshCounters } from "../core/connection-counters";
import { DurableObject } from "cloudflare:workers";
import { ApiError } from "../core/errors";
import type { StreamRequest } from "../core/hrana/proto";
import {
  newStreamState,
  type PipelineContext,
  type PipelineOutcome,
  runPipeline,
  type StreamState,
} from "../workers/libsql/pipeline";

/** How long a stream lives without a request (sqld keeps its streams about as long). */
export const STREAM_IDLE_MS = 15_000;

export type StreamAnswer =
  | { kind: "ok"; outcome: PipelineOutcome; seq: number; closed: boolean }
  | { kind: "error"; error: ReturnType<ApiError["toBody"]> };

interface Kept {
  cluster: string;
  seq: number;
  lastUsed: number;
  state: Omit<StreamState, "stored"> & { stored: [number, string][] };
  last: { seq: number; body: string; answer: StreamAnswer } | null;
}

/** A last answer larger than this is not kept for retries (a row holds at most 2 MB). */
const MAX_KEPT_ANSWER_CHARS = 1_000_000;

export class LibsqlStream extends DurableObject<Env> {
  private busy: Promise<unknown> = Promise.resolve();

  /** Runs a pipeline that came with baton number `seq` (0: this stream's first). */
  pipeline(
    context: PipelineContext,
    seq: number,
    body: string,
    requests: StreamRequest[],
  ): Promise<StreamAnswer> {
    // One request at a time, in arrival order: a stream is a sequence.
    const run = this.busy.then(() => this.run(context, seq, body, requests));
    this.busy = run.catch(() => undefined);
    return run;
  }

  private load(): Kept | null {
    const text = this.ctx.storage.kv.get<string>("stream");
    return typeof text === "string" ? (JSON.parse(text) as Kept) : null;
  }

  private save(kept: Kept): void {
    const last =
      kept.last && JSON.stringify(kept.last).length <= MAX_KEPT_ANSWER_CHARS ? kept.last : null;
    this.ctx.storage.kv.put("stream", JSON.stringify({ ...kept, last }));
  }

  private async run(
    context: PipelineContext,
    seq: number,
    body: string,
    requests: StreamRequest[],
  ): Promise<StreamAnswer> {
    const now = Date.now();
    let kept = this.load();
    if (kept !== null && now - kept.lastUsed > STREAM_IDLE_MS) {
      this.forget();
      kept = null;
      if (seq !== 0) {
        return expired(`the stream expired after ${STREAM_IDLE_MS / 1000} s without a request`);
      }
    }
    if (kept === null) {
      if (seq !== 0) return expired("the stream is unknown here (it expired, or was never opened)");
      kept = {
        cluster: context.cluster,
        seq: 0,
        lastUsed: now,
        state: toKept(newStreamState()),
        last: null,
      };
    } else if (kept.last !== null && seq === kept.last.seq && body === kept.last.body) {
      return kept.last.answer;
    } else if (kept.cluster !== context.cluster) {
      return expired("the stream belongs to another cluster");
    } else if (seq !== kept.seq) {
      return expired("this baton was already used: each baton is good for one request");
    }
    const state = fromKept(kept.state);
    const before = structuredClone(state);
    const outcome = await runPipeline(this.env, context, state, requests);
    const answer: StreamAnswer = { kind: "ok", outcome, seq: seq + 1, closed: state.closed };
    if (outcome.retryable && context.idempotencyKey !== undefined) {
      // The commit may have happened: the retry must reach the master again, as it was.
      this.save({ ...kept, lastUsed: Date.now(), state: toKept(before), last: null });
      return { ...answer, seq };
    }
    // A closed stream is kept until its alarm too: a retry of its last request gets its answer.
    this.save({
      ...kept,
      seq: seq + 1,
      lastUsed: Date.now(),
      state: toKept(state),
      last: { seq, body, answer },
    });
    await this.ctx.storage.setAlarm(Date.now() + STREAM_IDLE_MS + 1_000);
    return answer;
  }

  override async alarm(): Promise<void> {
    const kept = this.load();
    if (kept === null) return;
    const idle = Date.now() - kept.lastUsed;
    if (idle > STREAM_IDLE_MS) this.forget();
    else await this.ctx.storage.setAlarm(kept.lastUsed + STREAM_IDLE_MS + 1_000);
  }

  private forget(): void {
    this.ctx.storage.kv.delete("stream");
  }
}

function toKept(state: StreamState): Kept["state"] {
  return { ...state, stored: [...state.stored] };
}

function fromKept(kept: Kept["state"]): StreamState {
  // A stream kept before connection counters existed starts them fresh.
  return { ...kept, stored: new Map(kept.stored), counters: kept.counters ?? freshCounters() };
}

function expired(message: string): StreamAnswer {
  return {
    kind: "error",
    error: new ApiError("BAD_REQUEST", message, { hranaCode: "STREAM_EXPIRED" }).toBody(),
  };
}
