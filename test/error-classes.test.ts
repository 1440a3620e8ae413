/**
 * How workers/errors.ts classes an error that was thrown, not returned: once it
 * crossed DO RPC only its message is left, and the class decides whether a
 * client retries. SQLite refusing a statement is the request's fault (400
 * INVALID_SQL), whatever words of the statement it quotes; a call the platform
 * flags, or storage that is busy or failing, is the cluster's (503 UNAVAILABLE).
 */
import { describe, expect, it } from "vitest";
import { ApiError } from "../core/errors";
import { toApiError } from "../workers/errors";

const crossedRpc = (message: string, flags: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), { remote: true, ...flags });

describe("toApiError", () => {
  it("keeps an ApiError as it is", () => {
    const error = new ApiError("NOT_FOUND", "no replica x");
    expect(toApiError(error)).toBe(error);
  });

  it("classes SQLite's refusals of a statement as INVALID_SQL, with SQLite's words", () => {
    for (const message of [
      'near "garbage": syntax error at offset 0: SQLITE_ERROR',
      'near "reset": syntax error at offset 0: SQLITE_ERROR',
      "UNIQUE constraint failed: t.id: SQLITE_CONSTRAINT",
      "not authorized: SQLITE_AUTH",
      "string or blob too big: SQLITE_TOOBIG",
    ]) {
      const classed = toApiError(crossedRpc(message));
      expect(classed.code, message).toBe("INVALID_SQL");
      expect(classed.message).toBe(message);
    }
  });

  it("leaves storage failures and flagged calls to the cluster: 503, retry", () => {
    for (const error of [
      crossedRpc("database is locked: SQLITE_BUSY"),
      crossedRpc("disk I/O error: SQLITE_IOERR"),
      crossedRpc("no such table: t: SQLITE_ERROR", { retryable: true }),
      crossedRpc("Durable Object reset because its code was updated.", {
        durableObjectReset: true,
      }),
      crossedRpc("something else entirely"),
    ]) {
      const classed = toApiError(error);
      expect(classed.code, error.message).toBe("UNAVAILABLE");
      expect(classed.details?.retryAfterSeconds).toBe(1);
    }
  });
});
