/**
 * GET /openapi.json: the OpenAPI 3.1 description of the front door, generated
 * from the routes' own registrations (workers/openapi/route.ts) and so from
 * the zod schemas that validate their requests. Public, like any API
 * description: it names no cluster and reveals nothing a token protects.
 *
 * It is served before the front door's routes rather than as one of them:
 * every route there takes a token and a cluster name, and the bad-input
 * sweeps (test/bad-input-*.test.ts) hold each of them to that.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { FrontDoor } from "./route";
import { z } from "zod";
import { json, SECURITY_SCHEMES } from "./responses";

export const OPENAPI_PATH = "/openapi.json";

const INFO = {
  title: "dosqlite-cluster",
  version: "1",
  summary: "Replicated SQLite on Cloudflare Durable Objects, with full-sync replication.",
  description:
    "The front door's HTTP API (docs/api.md). Every body is JSON; Content-Type is not required. " +
    'Every error is `{"error": {"code", "message", ...details}}`.',
};

/** Generated once per isolate, after every route module has registered (at import). */
const documents = new WeakMap<object, unknown>();

export function openApiDocument(app: OpenAPIHono<FrontDoor>): unknown {
  let document = documents.get(app);
  if (document === undefined) {
    for (const [name, scheme] of Object.entries(SECURITY_SCHEMES)) {
      app.openAPIRegistry.registerComponent("securitySchemes", name, scheme);
    }
    app.openAPIRegistry.registerPath({
      method: "get",
      path: OPENAPI_PATH,
      operationId: "openApi",
      tags: ["meta"],
      summary: "This document",
      security: [],
      responses: { 200: json(z.looseObject({ openapi: z.string() }), "OpenAPI 3.1.") },
    });
    document = app.getOpenAPI31Document({
      openapi: "3.1.0",
      info: INFO,
      tags: [
        { name: "data", description: "Writes and reads (data token or admin token)." },
        { name: "admin", description: "Status, tunables, verify, membership, promotion." },
        {
          name: "faults",
          description: "Test only: refused with 403 unless debug_fault_injection is on.",
        },
        { name: "metrics", description: "Prometheus text (admin token)." },
        {
          name: "libsql",
          description:
            "libSQL's protocol, Hrana over HTTP v2, for @libsql/client (data or admin token); its errors are `{message, code}`.",
        },
        { name: "meta", description: "The API's own description (no token)." },
      ],
    });
    documents.set(app, document);
  }
  return document;
}

/** The Worker: the description at OPENAPI_PATH (GET and HEAD), everything else to the app. */
export function withApiDescription(app: OpenAPIHono<FrontDoor>): ExportedHandler<Env> {
  return {
    fetch(request, env, ctx) {
      if (new URL(request.url).pathname !== OPENAPI_PATH) return app.fetch(request, env, ctx);
      if (request.method !== "GET" && request.method !== "HEAD") {
        // The front door's own 404, so every unknown route answers alike.
        return app.fetch(request, env, ctx);
      }
      const body = request.method === "HEAD" ? null : JSON.stringify(openApiDocument(app));
      return new Response(body, {
        headers: { "content-type": "application/json; charset=utf-8" },
      });
    },
  };
}
