/**
 * One attempt of one HTTP call: the request as the front door expects it
 * (bearer token, JSON body), an optional timeout, and the answer read whole,
 * as JSON or text, or thrown as the ClusterError it stands for. Retrying is
 * not its business (retry.ts).
 */
import {
  ClusterError,
  errorFromResponse,
  NetworkError,
  UnexpectedResponseError,
} from "./errors.ts";
import { parseRetryAfter } from "./retry.ts";

/** The platform's fetch, or anything shaped like it (a service binding, a test double). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface HttpCall {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** Path and query, starting with "/". */
  path: string;
  token: string | undefined;
  body?: unknown;
  headers?: Record<string, string>;
  /** `text` for /metrics; every other route answers JSON. */
  answer: "json" | "text";
}

export interface Transport {
  /** The front door, without a trailing slash. */
  url: string;
  fetch: FetchLike;
  /** Abort an attempt that has not answered after this long (it counts as no answer). */
  attemptTimeoutMs: number | undefined;
  now: () => number;
}

/** Thrown into fetch when the attempt's own timer fires, to tell it from the caller's abort. */
class AttemptTimeout extends Error {}

export async function sendOnce(
  transport: Transport,
  call: HttpCall,
  signal: AbortSignal | undefined,
): Promise<unknown> {
  const headers: Record<string, string> = { ...call.headers };
  if (call.token !== undefined) headers.authorization = `Bearer ${call.token}`;
  if (call.body !== undefined) headers["content-type"] = "application/json";
  // One controller for both the caller's signal and this attempt's timer.
  const controller = new AbortController();
  const forward = () => controller.abort(signal?.reason);
  if (signal?.aborted) throw signal.reason;
  signal?.addEventListener("abort", forward, { once: true });
  const timeoutMs = transport.attemptTimeoutMs;
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => controller.abort(new AttemptTimeout()), timeoutMs);
  try {
    const response = await transport.fetch(`${transport.url}${call.path}`, {
      method: call.method,
      headers,
      ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
      signal: controller.signal,
    });
    const text = await response.text();
    if (!response.ok) {
      const retryAfter = parseRetryAfter(response.headers.get("retry-after"), transport.now());
      throw errorFromResponse(response.status, text, retryAfter);
    }
    if (call.answer === "text") return text;
    try {
      return JSON.parse(text);
    } catch {
      throw new UnexpectedResponseError(response.status, text);
    }
  } catch (error) {
    if (error instanceof ClusterError) throw error;
    // The caller gave up: not a failure to retry, so its reason goes up as it is.
    if (signal?.aborted) throw signal.reason;
    if (controller.signal.reason instanceof AttemptTimeout) {
      throw new NetworkError(`${call.method} ${call.path}: no answer within ${timeoutMs} ms`, {
        timedOut: true,
      });
    }
    const reason = error instanceof Error ? error.message : String(error);
    throw new NetworkError(`${call.method} ${call.path}: no answer (${reason})`, { cause: error });
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    signal?.removeEventListener("abort", forward);
  }
}
