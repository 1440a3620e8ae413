/**
 * Retries: which failures are sent again, how long to wait between attempts,
 * and when to stop. Exponential backoff with full jitter (each wait uniform in
 * [0, min(max, base * 2^(retry-1)))), so clients that failed together do not
 * come back together; never sooner than the server's Retry-After; bounded by
 * attempts and by time since the first attempt.
 */
import { ClusterError } from "./errors.ts";

export interface RetryPolicy {
  /** Attempts in all, the first included: 1 is no retry. */
  maxAttempts: number;
  /** The ceiling of the first retry's wait; each retry doubles it. */
  baseDelayMs: number;
  /** No single wait's ceiling exceeds this (Retry-After may ask for more). */
  maxDelayMs: number;
  /** No retry is started if its wait would end more than this after the first attempt began. */
  deadlineMs: number;
  /** "full": uniform in [0, ceiling); "none": the ceiling itself (reproducible schedules). */
  jitter: "full" | "none";
  /** Wait at least what the server's Retry-After header asks for. */
  honourRetryAfter: boolean;
}

/** A few retries over a minute: long enough for a master restart or a handover. */
export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 6,
  baseDelayMs: 100,
  maxDelayMs: 5_000,
  deadlineMs: 60_000,
  jitter: "full",
  honourRetryAfter: true,
};

export const NO_RETRY: RetryPolicy = { ...DEFAULT_RETRY, maxAttempts: 1 };

/** How long to wait before retry number `retry` (1 for the second attempt), before Retry-After. */
export function backoffDelay(retry: number, policy: RetryPolicy, random: () => number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return policy.jitter === "full" ? Math.floor(random() * ceiling) : ceiling;
}

/** The wait before retry number `retry` after `error`. */
export function retryDelay(
  retry: number,
  error: ClusterError,
  policy: RetryPolicy,
  random: () => number,
): number {
  const backoff = backoffDelay(retry, policy, random);
  const asked = policy.honourRetryAfter ? error.retryAfterMs : undefined;
  return asked === undefined ? backoff : Math.max(backoff, asked);
}

/** Retry-After in milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(header: string | null, now: number): number | undefined {
  if (header === null) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** One attempt about to be sent. */
export interface AttemptInfo {
  /** 1 for the first attempt. */
  attempt: number;
  method: string;
  path: string;
  /** The write's key, the same on every attempt. */
  idempotencyKey: string | undefined;
}

/** An attempt that failed and will be retried after `delayMs`. */
export interface RetryInfo extends AttemptInfo {
  error: ClusterError;
  delayMs: number;
}

/** Seeing each attempt: for logs, metrics, and histories that record every attempt. */
export interface RequestHooks {
  onAttempt?(info: AttemptInfo): void;
  onRetry?(info: RetryInfo): void;
}

export interface RetryRun {
  policy: RetryPolicy;
  hooks: readonly RequestHooks[];
  request: Omit<AttemptInfo, "attempt">;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  random: () => number;
  now: () => number;
  signal: AbortSignal | undefined;
}

/**
 * Runs `attempt` until it succeeds, fails with an error that is not
 * retryable, or the policy's attempts or time run out; throws the last error,
 * with `attempts` set. Anything that is not a ClusterError (the caller's own
 * abort, a bug) is thrown at once.
 */
export async function withRetries<T>(attempt: () => Promise<T>, run: RetryRun): Promise<T> {
  const started = run.now();
  for (let n = 1; ; n++) {
    for (const hooks of run.hooks) hooks.onAttempt?.({ ...run.request, attempt: n });
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof ClusterError)) throw error;
      error.attempts = n;
      if (!error.retryable || n >= run.policy.maxAttempts) throw error;
      const delayMs = retryDelay(n, error, run.policy, run.random);
      if (run.now() + delayMs - started > run.policy.deadlineMs) throw error;
      for (const hooks of run.hooks) {
        hooks.onRetry?.({ ...run.request, attempt: n, error, delayMs });
      }
      await run.sleep(delayMs, run.signal);
    }
  }
}

/** setTimeout as a promise that an abort cuts short (with the signal's reason). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
