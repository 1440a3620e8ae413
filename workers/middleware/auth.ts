/**
 * Bearer-token auth. Data routes accept DATA_TOKEN or ADMIN_TOKEN; admin routes
 * and /metrics need ADMIN_TOKEN. Tokens are compared in constant time over
 * their SHA-256 digests, so neither content nor length leaks through timing.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createMiddleware } from "hono/factory";
import { ApiError } from "../../core/errors";

function digest(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/** The configured tokens' digests: a token changes only with a new deployment of the Worker. */
const expectedDigests = new Map<string, Buffer>();

function matches(given: string, expected: string | undefined): boolean {
  if (expected === undefined || expected === "") return false;
  let known = expectedDigests.get(expected);
  if (known === undefined) {
    known = digest(expected);
    expectedDigests.set(expected, known);
  }
  return timingSafeEqual(digest(given), known);
}

function bearer(header: string | undefined): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return match?.[1] ?? null;
}

/** Throws 401 unless the Authorization header carries a token good for `level`. */
export function checkToken(env: Env, header: string | undefined, level: "data" | "admin"): void {
  const token = bearer(header);
  if (token === null) {
    throw new ApiError("UNAUTHORIZED", "missing Authorization: Bearer <token> header");
  }
  const admin = matches(token, env.ADMIN_TOKEN);
  const data = level === "data" && !admin ? matches(token, env.DATA_TOKEN) : false;
  if (!admin && !data) {
    throw new ApiError(
      "UNAUTHORIZED",
      level === "admin" ? "this route needs the admin token" : "invalid token",
    );
  }
}

export function requireToken(level: "data" | "admin") {
  return createMiddleware<{ Bindings: Env }>(async (c, next) => {
    checkToken(c.env, c.req.header("authorization"), level);
    await next();
  });
}
