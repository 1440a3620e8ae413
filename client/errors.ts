/**
 * Errors the client throws: one class per code of docs/api.md's error table,
 * all under ClusterError, plus NetworkError (no answer) and
 * UnexpectedResponseError (an answer that is not the API's). Callers branch
 * with `instanceof` or on `code`; the retry loop asks `retryable`.
 */

/** The codes of docs/api.md and their statuses (a test holds this to core/errors.ts). */
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
  NOT_EMPTY: 409,
  GONE: 410,
  PAYLOAD_TOO_LARGE: 413,
  MISCONFIGURED: 500,
  NOT_DURABLE: 503,
  UNAVAILABLE: 503,
  COMMIT_TIMEOUT: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/**
 * Codes whose request may succeed if sent again. A write is safe to resend
 * because it keeps its Idempotency-Key: the server answers a retry of a
 * commit it made from the saved result. MISCONFIGURED is a 500 that no retry
 * fixes, so status alone does not decide.
 */
const RETRYABLE_CODES: ReadonlySet<string> = new Set([
  "UNAVAILABLE",
  "NOT_DURABLE",
  "COMMIT_TIMEOUT",
]);

export interface ErrorInit {
  /** The HTTP status the answer came with; by default the status of the class's code. */
  status?: number;
  details?: Record<string, unknown>;
  /** What Retry-After asked for, in milliseconds. */
  retryAfterMs?: number;
  cause?: unknown;
}

export class ClusterError extends Error {
  /** An ErrorCode, NETWORK_ERROR, UNEXPECTED_RESPONSE, or a code from a newer server. */
  readonly code: string;
  /** The HTTP status; 0 when no answer came. */
  readonly status: number;
  /** What the error body carried beside code and message (`field`, `lsn`, `name`, ...). */
  readonly details: Record<string, unknown>;
  readonly retryAfterMs: number | undefined;
  /** Attempts made before this error was thrown (the retry loop sets it). */
  attempts = 1;

  constructor(code: string, status: number, message: string, init: ErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "ClusterError";
    this.code = code;
    this.status = status;
    this.details = init.details ?? {};
    this.retryAfterMs = init.retryAfterMs;
  }

  /** Whether sending the same request again may succeed. */
  get retryable(): boolean {
    return RETRYABLE_CODES.has(this.code);
  }
}

/** No answer: the connection failed, or the attempt timed out. A write's outcome is unknown. */
export class NetworkError extends ClusterError {
  readonly timedOut: boolean;
  constructor(message: string, init: ErrorInit & { timedOut?: boolean } = {}) {
    super("NETWORK_ERROR", 0, message, init);
    this.name = "NetworkError";
    this.timedOut = init.timedOut ?? false;
  }
  override get retryable(): boolean {
    return true;
  }
}

/**
 * An answer without the API's error body (a proxy's error page, a truncated
 * body). A 5xx of that kind says nothing about a write, so it is retried like
 * no answer at all; anything else is not.
 */
export class UnexpectedResponseError extends ClusterError {
  /** The start of the body, for the message and for debugging. */
  readonly body: string;
  constructor(status: number, body: string, init: ErrorInit = {}) {
    super(
      "UNEXPECTED_RESPONSE",
      status,
      `unexpected ${status} answer: ${body.slice(0, 200)}`,
      init,
    );
    this.name = "UnexpectedResponseError";
    this.body = body.slice(0, 2000);
  }
  override get retryable(): boolean {
    return this.status >= 500;
  }
}

export class BadRequestError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super("BAD_REQUEST", init?.status ?? ERROR_STATUS.BAD_REQUEST, message, init);
    this.name = "BadRequestError";
  }
}

export class InvalidSqlError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super("INVALID_SQL", init?.status ?? ERROR_STATUS.INVALID_SQL, message, init);
    this.name = "InvalidSqlError";
  }
}

export class NonDeterministicError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super("NON_DETERMINISTIC", init?.status ?? ERROR_STATUS.NON_DETERMINISTIC, message, init);
    this.name = "NonDeterministicError";
  }
}

export class ReservedNameError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super("RESERVED_NAME", init?.status ?? ERROR_STATUS.RESERVED_NAME, message, init);
    this.name = "ReservedNameError";
  }
}

export class UnknownTunableError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super("UNKNOWN_TUNABLE", init?.status ?? ERROR_STATUS.UNKNOWN_TUNABLE, message, init);
    this.name = "UnknownTunableError";
  }
}

export class InvalidTunableValueError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super(
      "INVALID_TUNABLE_VALUE",
      init?.status ?? ERROR_STATUS.INVALID_TUNABLE_VALUE,
      message,
      init,
    );
    this.name = "InvalidTunableValueError";
  }
}

export class UnauthorizedError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super("UNAUTHORIZED", init?.status ?? ERROR_STATUS.UNAUTHORIZED, message, init);
    this.name = "UnauthorizedError";
  }
}

export class ForbiddenError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super("FORBIDDEN", init?.status ?? ERROR_STATUS.FORBIDDEN, message, init);
    this.name = "ForbiddenError";
  }
}

export class NotFoundError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super("NOT_FOUND", init?.status ?? ERROR_STATUS.NOT_FOUND, message, init);
    this.name = "NotFoundError";
  }
}

export class IdempotencyKeyReusedError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super(
      "IDEMPOTENCY_KEY_REUSED",
      init?.status ?? ERROR_STATUS.IDEMPOTENCY_KEY_REUSED,
      message,
      init,
    );
    this.name = "IdempotencyKeyReusedError";
  }
}

export class NotEmptyError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super("NOT_EMPTY", init?.status ?? ERROR_STATUS.NOT_EMPTY, message, init);
    this.name = "NotEmptyError";
  }
}

export class GoneError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super("GONE", init?.status ?? ERROR_STATUS.GONE, message, init);
    this.name = "GoneError";
  }
}

export class PayloadTooLargeError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super("PAYLOAD_TOO_LARGE", init?.status ?? ERROR_STATUS.PAYLOAD_TOO_LARGE, message, init);
    this.name = "PayloadTooLargeError";
  }
}

export class MisconfiguredError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super("MISCONFIGURED", init?.status ?? ERROR_STATUS.MISCONFIGURED, message, init);
    this.name = "MisconfiguredError";
  }
}

export class NotDurableError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super("NOT_DURABLE", init?.status ?? ERROR_STATUS.NOT_DURABLE, message, init);
    this.name = "NotDurableError";
  }
}

export class UnavailableError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super("UNAVAILABLE", init?.status ?? ERROR_STATUS.UNAVAILABLE, message, init);
    this.name = "UnavailableError";
  }
}

export class CommitTimeoutError extends ClusterError {
  constructor(message: string, init?: ErrorInit) {
    super("COMMIT_TIMEOUT", init?.status ?? ERROR_STATUS.COMMIT_TIMEOUT, message, init);
    this.name = "CommitTimeoutError";
  }
}

type ErrorClass = new (message: string, init?: ErrorInit) => ClusterError;

/** The class for each code: exhaustive, so a code added above without a class does not compile. */
export const ERROR_CLASSES: Record<ErrorCode, ErrorClass> = {
  BAD_REQUEST: BadRequestError,
  INVALID_SQL: InvalidSqlError,
  NON_DETERMINISTIC: NonDeterministicError,
  RESERVED_NAME: ReservedNameError,
  UNKNOWN_TUNABLE: UnknownTunableError,
  INVALID_TUNABLE_VALUE: InvalidTunableValueError,
  UNAUTHORIZED: UnauthorizedError,
  FORBIDDEN: ForbiddenError,
  NOT_FOUND: NotFoundError,
  IDEMPOTENCY_KEY_REUSED: IdempotencyKeyReusedError,
  NOT_EMPTY: NotEmptyError,
  GONE: GoneError,
  PAYLOAD_TOO_LARGE: PayloadTooLargeError,
  MISCONFIGURED: MisconfiguredError,
  NOT_DURABLE: NotDurableError,
  UNAVAILABLE: UnavailableError,
  COMMIT_TIMEOUT: CommitTimeoutError,
};

function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_STATUS, code);
}

/**
 * The error an unsuccessful answer stands for: `{"error": {"code", "message",
 * ...details}}` becomes the class of its code (a code this client does not
 * know becomes a plain ClusterError that is not retried); any other body an
 * UnexpectedResponseError.
 */
export function errorFromResponse(
  status: number,
  text: string,
  retryAfterMs: number | undefined,
): ClusterError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return new UnexpectedResponseError(status, text, { retryAfterMs });
  }
  const error = (parsed as { error?: unknown } | null)?.error as
    | { code?: unknown; message?: unknown }
    | undefined;
  if (typeof error?.code !== "string" || typeof error.message !== "string") {
    return new UnexpectedResponseError(status, text, { retryAfterMs });
  }
  const { code, message, ...details } = error as Record<string, unknown> & {
    code: string;
    message: string;
  };
  // The status of the answer, not of the code's class: a proxy's 502 carrying the API's
  // UNAVAILABLE body is reported as the 502 it was.
  const init: ErrorInit = { status, details, retryAfterMs };
  if (isErrorCode(code)) return new ERROR_CLASSES[code](message, init);
  return new ClusterError(code, status, message, init);
}
