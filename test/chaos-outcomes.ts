/**
 * How the chaos run's clients read a failed call: the text the histories
 * record, and whether a write is known not to have happened.
 */
import { ClusterError, NetworkError, UnexpectedResponseError } from "../client/index.ts";

/** A failed attempt as the histories record it: the status and code, or why no answer came. */
export function describeFailure(error: unknown): string {
  if (error instanceof NetworkError) return `no answer: ${error.message}`;
  if (error instanceof ClusterError) return `${error.status} ${error.code}`;
  return `no answer: ${String(error)}`;
}

/**
 * Whether a write that failed so is known not to have happened: the API
 * refused it (4xx). Anything else (no answer, a 5xx, an answer the client
 * could not read) leaves it unknown, which the checkers allow either way.
 */
export function definitelyFailed(error: unknown): boolean {
  return (
    error instanceof ClusterError &&
    !(error instanceof UnexpectedResponseError) &&
    error.status >= 400 &&
    error.status < 500
  );
}
