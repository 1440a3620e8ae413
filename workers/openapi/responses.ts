/**
 * What the document says about responses: the error body of docs/api.md
 * (one schema per status, its `code` limited to the codes a route can answer
 * with there), `Retry-After` on 503s, the two bearer tokens, and JSON bodies.
 */
import type { RouteConfig } from "@hono/zod-openapi";
import { z } from "zod";
import { ERROR_STATUS, type ErrorCode } from "../../core/errors";

type Responses = RouteConfig["responses"];

/** Data routes take either token; admin routes, fault routes and /metrics the admin token. */
export const SECURITY_SCHEMES = {
  dataToken: {
    type: "http",
    scheme: "bearer",
    description: "DATA_TOKEN (a Worker secret; `dev-data-token` under `wrangler dev`).",
  },
  adminToken: {
    type: "http",
    scheme: "bearer",
    description: "ADMIN_TOKEN (a Worker secret; `dev-admin-token` under `wrangler dev`).",
  },
} as const;

type Requirement = Record<string, string[]>[];
export const DATA_AUTH: Requirement = [{ dataToken: [] }, { adminToken: [] }];
export const ADMIN_AUTH: Requirement = [{ adminToken: [] }];

/** A JSON response (or request) body. */
export function json(schema: z.ZodType, description: string) {
  return { description, content: { "application/json": { schema } } };
}

/** Codes every route may answer with: auth, the cluster name, the deployment, the cluster's health. */
export const EVERY_ROUTE: readonly ErrorCode[] = [
  "BAD_REQUEST",
  "UNAUTHORIZED",
  "NOT_FOUND",
  "MISCONFIGURED",
  "UNAVAILABLE",
];

/** Codes of a route that reads a JSON body (workers/middleware/json.ts). */
export const BODY: readonly ErrorCode[] = ["BAD_REQUEST", "PAYLOAD_TOO_LARGE"];

/** A write: SQL the guard or SQLite refuses, idempotency, size, and the commit's fate. */
export const WRITE: readonly ErrorCode[] = [
  ...BODY,
  "INVALID_SQL",
  "NON_DETERMINISTIC",
  "RESERVED_NAME",
  "IDEMPOTENCY_KEY_REUSED",
  "NOT_DURABLE",
  "COMMIT_TIMEOUT",
];

/** A fault route while `debug_fault_injection` is off. */
export const FAULT: readonly ErrorCode[] = ["FORBIDDEN"];

const retryAfter = {
  "Retry-After": {
    description: "Seconds to wait before retrying (with the same Idempotency-Key for writes).",
    schema: { type: "integer" as const, minimum: 0 },
  },
};

/** One response per status the codes map to, each with the error body docs/api.md gives. */
export function errorResponses(...groups: (readonly ErrorCode[])[]): Responses {
  const codes = [...new Set([...EVERY_ROUTE, ...groups.flat()])];
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Responses = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const schema = z.object({
      error: z.looseObject({
        code: z.enum(list as [ErrorCode, ...ErrorCode[]]),
        message: z.string().describe("A sentence for people; never a stack trace."),
      }),
    });
    const description = list.map((code) => `\`${code}\``).join(", ");
    responses[String(status)] = {
      ...json(schema, `${description}; details, when any, sit beside code and message`),
      ...(status === 503 ? { headers: retryAfter } : {}),
    };
  }
  return responses;
}
