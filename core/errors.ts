/**
 * The error codes of the HTTP contract (shared/API.md) and the one class that
 * carries them. Every layer throws or returns `ApiError`; the front door maps it
 * to `{"error": {"code", "message", ...details}}` with `status` once, at the edge.
 */
export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  INVALID_SQL: 400,
  NON_DETERMINISTIC: 400,
  RESERVED_NAME: 400,
  UNKNOWN_TUNABLE: 400,
  INVALID_TUNABLE_VALUE: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  IDEMPOTENCY_KEY_REUSED: 409,
  /** An import into a cluster that already holds user objects. */
  NOT_EMPTY: 409,
  /** A change stream asked to start before the oldest record the log still keeps. */
  GONE: 410,
  PAYLOAD_TOO_LARGE: 413,
  NOT_DURABLE: 503,
  UNAVAILABLE: 503,
  /** The deployment's own configuration (wrangler vars) is wrong: not the request's fault, and no retry helps. */
  MISCONFIGURED: 500,
  COMMIT_TIMEOUT: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** The serialisable form of an error: it crosses DO RPC as a plain value. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    details?: Record<string, unknown>,
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "ApiError";
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  toBody(): ErrorBody {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }

  static fromBody(body: ErrorBody): ApiError {
    return new ApiError(body.code, body.message, body.details);
  }
}

/** RPC results: expected failures travel as values, never as thrown errors. */
export type Result<T> = { ok: true; value: T } | { ok: false; error: ErrorBody };

export function ok<T>(value: T): Result<T> {
  return { ok: true, value };
}

export function fail<T>(error: ApiError): Result<T> {
  return { ok: false, error: error.toBody() };
}
