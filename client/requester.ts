/**
 * What the data and admin clients share: the transport, the retry policy and
 * hooks, and the rule that decides whether a call is retried at all.
 *
 * A call is retried only if sending it twice does no harm: reads, settings
 * that are set rather than added to, and writes, which carry an
 * Idempotency-Key the server replays. Calls that act once per request (add a
 * replica, promote, crash) are sent once unless the caller passes a policy
 * for that call, since a retry after a lost answer would act again.
 */
import {
  DEFAULT_RETRY,
  NO_RETRY,
  type RequestHooks,
  type RetryPolicy,
  sleep as realSleep,
  withRetries,
} from "./retry.ts";
import { type FetchLike, type HttpCall, sendOnce, type Transport } from "./transport.ts";

/** Per call: how to retry it, a signal to give up on it, and hooks to watch its attempts. */
export interface CallOptions {
  /** Merged over the client's policy; false sends one attempt. */
  retry?: Partial<RetryPolicy> | false;
  /** Aborts the attempt in flight and any wait; the abort's reason is thrown as it is. */
  signal?: AbortSignal;
  hooks?: RequestHooks;
}

/** How the admin and fault clients make a call: method, path under the cluster, body. */
export type AdminCall = <T>(
  method: HttpCall["method"],
  path: string,
  idempotent: boolean,
  options: CallOptions,
  body?: unknown,
) => Promise<T>;

export interface RequesterOptions {
  url: string;
  fetch?: FetchLike;
  retry?: Partial<RetryPolicy> | false;
  attemptTimeoutMs?: number;
  hooks?: RequestHooks;
  /** Seams for tests: the wait between attempts, jitter's randomness, the clock. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  now?: () => number;
}

export interface Call extends HttpCall {
  /** Safe to send again without a caller's say-so. */
  idempotent: boolean;
  idempotencyKey?: string;
}

export class Requester {
  private readonly transport: Transport;
  private readonly policy: RetryPolicy;
  private readonly hooks: RequestHooks | undefined;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly random: () => number;
  private readonly now: () => number;

  constructor(options: RequesterOptions) {
    this.now = options.now ?? Date.now;
    // Bound late: a Worker's fetch must be called with the global as `this`.
    const platformFetch: FetchLike = (input, init) => fetch(input, init);
    this.transport = {
      url: options.url.replace(/\/+$/, ""),
      fetch: options.fetch ?? platformFetch,
      attemptTimeoutMs: options.attemptTimeoutMs,
      now: this.now,
    };
    this.policy =
      options.retry === false ? NO_RETRY : { ...DEFAULT_RETRY, ...(options.retry ?? {}) };
    this.hooks = options.hooks;
    this.sleep = options.sleep ?? realSleep;
    this.random = options.random ?? Math.random;
  }

  /** The policy one call runs under. */
  policyFor(idempotent: boolean, retry: CallOptions["retry"]): RetryPolicy {
    if (retry === false) return NO_RETRY;
    if (retry === undefined) return idempotent ? this.policy : NO_RETRY;
    return { ...this.policy, ...retry };
  }

  run<T>(call: Call, options: CallOptions = {}): Promise<T> {
    const hooks = [this.hooks, options.hooks].filter((h): h is RequestHooks => h !== undefined);
    return withRetries(() => sendOnce(this.transport, call, options.signal) as Promise<T>, {
      policy: this.policyFor(call.idempotent, options.retry),
      hooks,
      request: { method: call.method, path: call.path, idempotencyKey: call.idempotencyKey },
      sleep: this.sleep,
      random: this.random,
      now: this.now,
      signal: options.signal,
    });
  }
}
