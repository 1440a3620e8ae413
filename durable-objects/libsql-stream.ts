/**
 * One libSQL stream that outlives its HTTP request: the SQL texts it stored
 * and the transaction it has open (replayed on each request, see
 * core/hrana/program.ts). It holds them in memory only: a stream idle for
 * STREAM_IDLE_MS, or whose object restarted, is gone, and its baton gets a
 * clear error. Each baton number is taken once; the request it last answered
 * may be sent again (a retry after a lost response) and gets the same answer.
 */
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

export class LibsqlStream extends DurableObject<Env> {
  private state: StreamState | null = null;
  private cluster: string | null = null;
  private seq = 0;
  private lastUsed = 0;
  private last: { seq: number; body: string; answer: StreamAnswer } | null = null;
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

  private async run(
    context: PipelineContext,
    seq: number,
    body: string,
    requests: StreamRequest[],
  ): Promise<StreamAnswer> {
    const now = Date.now();
    if (seq === 0 && this.cluster === null) {
      this.cluster = context.cluster;
      this.state = newStreamState();
    } else if (this.last !== null && seq === this.last.seq && body === this.last.body) {
      return this.last.answer;
    } else if (this.state === null || this.cluster !== context.cluster) {
      return expired("the stream is unknown here (it expired, or its object restarted)");
    } else if (seq !== this.seq) {
      return expired("this baton was already used: each baton is good for one request");
    } else if (now - this.lastUsed > STREAM_IDLE_MS) {
      // Whatever it held (an open transaction) was never written: it goes.
      this.state = null;
      return expired(`the stream expired after ${STREAM_IDLE_MS / 1000} s without a request`);
    }
    const state = this.state;
    if (state === null) return expired("the stream is unknown here");
    const outcome = await runPipeline(this.env, context, state, requests);
    this.seq = seq + 1;
    this.lastUsed = Date.now();
    const answer: StreamAnswer = { kind: "ok", outcome, seq: this.seq, closed: state.closed };
    this.last = { seq, body, answer };
    if (state.closed) this.state = null;
    return answer;
  }
}

function expired(message: string): StreamAnswer {
  return {
    kind: "error",
    error: new ApiError("BAD_REQUEST", message, { hranaCode: "STREAM_EXPIRED" }).toBody(),
  };
}
