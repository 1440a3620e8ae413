/**
 * Bearer-token auth. Data routes accept DATA_TOKEN or ADMIN_TOKEN; admin routes
 * and /metrics need ADMIN_TOKEN. Tokens are compared in constant time over
 * their SHA-256 digests, so neither content nor length leaks through timing.
 */
import { createMiddleware } from "hono/factory";
import { ApiError } from "../../core/errors";

const encoder = new TextEncoder();

async function digest(text: string): Promise<ArrayBuffer> {
  return crypto.subtle.digest("SHA-256", encoder.encode(text));
}

async function matches(given: string, expected: string | undefined): Promise<boolean> {
  if (expected === undefined || expected === "") return false;
  const [a, b] = await Promise.all([digest(given), digest(expected)]);
  return crypto.subtle.timingSafeEqual(a, b);
}

function bearer(header: string | undefined): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return match?.[1] ?? null;
}

/** Throws 401 unless the Authorization header carries a token good for `level`. */
export async function checkToken(
  env: Env,
  header: string | undefined,
  level: "data" | "admin",
): Promise<void> {
  const token = bearer(header);
  if (token === null) {
    throw new ApiError("UNAUTHORIZED", "missing Authorization: Bearer <token> header");
  }
  const admin = await matches(token, env.ADMIN_TOKEN);
  const data = level === "data" && !admin ? await matches(token, env.DATA_TOKEN) : false;
  if (!admin && !data) {
    throw new ApiError(
      "UNAUTHORIZED",
      level === "admin" ? "this route needs the admin token" : "invalid token",
    );
  }
}

export function requireToken(level: "data" | "admin") {
  return createMiddleware<{ Bindings: Env }>(async (c, next) => {
    await checkToken(c.env, c.req.header("authorization"), level);
    await next();
  });
}
