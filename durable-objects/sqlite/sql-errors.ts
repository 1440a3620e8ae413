/**
 * SQLite's own errors are the client's: 400 INVALID_SQL with SQLite's words.
 * Anything else (a reset, an internal failure) stays as it is.
 */
import { ApiError } from "../../core/errors";

const SQLITE_ERROR =
  /SQLITE_|no such|syntax error|constraint|datatype mismatch|too many|not authorized|incomplete input|unrecognized token|has no column|already exists|misuse|out of range|cannot|may not|unsupported|parse|Wrong number of parameter|no more rows|bind|only the last statement|variable number|malformed|circular|ambiguous|not allowed|prohibited|must be|is not a function|wrong number of arguments|non-deterministic|misuse of|no column|duplicate|recursive|integer overflow|string or blob too big/i;

export function asSqlError(error: unknown): unknown {
  if (error instanceof ApiError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (SQLITE_ERROR.test(message)) {
    const clean = message.replace(/^Error:\s*/, "");
    return new ApiError("INVALID_SQL", clean, undefined, error);
  }
  return error;
}
