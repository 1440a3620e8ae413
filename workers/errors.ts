/**
 * The one place errors become HTTP: ApiError -> its status and body; a failed
 * DO call (reset, overloaded, unreachable) -> 503 UNAVAILABLE with Retry-After,
 * which a client may retry with the same Idempotency-Key; SQLite refusing a
 * statement, thrown rather than returned by a Durable Object -> 400 INVALID_SQL.
 */
import type { Context } from "hono";
import { ApiError, type ErrorBody } from "../core/errors";

export function errorResponse(c: Context, error: ApiError): Response {
  const body: Record<string, unknown> = { code: error.code, message: error.message };
  if (error.details !== undefined) Object.assign(body, error.details);
  const headers: Record<string, string> = {};
  if (error.status === 503) headers["Retry-After"] = String(error.details?.retryAfterSeconds ?? 1);
  return c.json({ error: body }, error.status as 400, headers);
}

export function fromBody(body: ErrorBody): ApiError {
  return ApiError.fromBody(body);
}

export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const flags = error as {
    retryable?: boolean;
    overloaded?: boolean;
    durableObjectReset?: boolean;
  };
  const message = error instanceof Error ? error.message : String(error);
  // Before the transient words: SQLite quotes the statement it refuses (`near "reset"`).
  const refusal = sqliteRefusal(flags, message);
  if (refusal !== null) return new ApiError("INVALID_SQL", refusal, undefined, error);
  if (flags?.retryable || flags?.overloaded || flags?.durableObjectReset || isTransient(message)) {
    return new ApiError(
      "UNAVAILABLE",
      "the cluster could not complete the request right now; retry (with the same Idempotency-Key for writes)",
      { retryAfterSeconds: 1 },
      error,
    );
  }
  console.error("unexpected error", error);
  return new ApiError(
    "UNAVAILABLE",
    "internal error; retry (with the same Idempotency-Key for writes)",
    { retryAfterSeconds: 1 },
    error,
  );
}

/**
 * SQLite's refusal of a statement, in workerd's words ("no such table: t:
 * SQLITE_ERROR"), for the result codes that are the statement's own fault.
 * An error thrown inside a Durable Object crosses RPC as a plain Error with
 * its message only (its class and fields are lost), so this is read from the
 * message: a refusal is deterministic, and answering it 503 "retry" would have
 * every client retry it forever. Busy, full, I/O and the other codes of the
 * storage itself stay failures of the cluster.
 */
const SQLITE_REFUSAL = /: SQLITE_(ERROR|CONSTRAINT|MISMATCH|RANGE|TOOBIG|AUTH)$/;

function sqliteRefusal(flags: { retryable?: boolean; overloaded?: boolean }, message: string) {
  if (flags?.retryable || flags?.overloaded || !SQLITE_REFUSAL.test(message)) return null;
  return message.replace(/^Error:\s*/, "");
}

/**
 * Failures a retry may not meet: a node restarting, a call cut off, and the
 * fault routes' lost or partitioned node (which stand for a region gone or
 * cut off). Logged without a stack: under load one per request adds up.
 */
function isTransient(message: string): boolean {
  return /reset|abort|network|disconnect|overload|crash|broken|exceeded|connection|is lost \(fault injection\)|is partitioned from the cluster/i.test(
    message,
  );
}
