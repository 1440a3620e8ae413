/**
 * A typed client for the cluster's HTTP API (docs/api.md), for Workers and
 * Node alike: nothing but the platform's fetch and crypto.randomUUID.
 * client/README.md shows it in use.
 */
export { AdminClient } from "./admin.ts";
export { bookmarkLsn, compareBookmarks, laterBookmark } from "./bookmarks.ts";
export {
  type ClientOptions,
  DosqliteClient,
  type ExecOptions,
  type QueryOptions,
} from "./client.ts";
export * from "./errors.ts";
export { FaultClient } from "./faults.ts";
export type { CallOptions } from "./requester.ts";
export {
  type AttemptInfo,
  backoffDelay,
  DEFAULT_RETRY,
  NO_RETRY,
  parseRetryAfter,
  type RequestHooks,
  type RetryInfo,
  type RetryPolicy,
  retryDelay,
} from "./retry.ts";
export type { FetchLike } from "./transport.ts";
export type * from "./types.ts";
export * from "./values.ts";
