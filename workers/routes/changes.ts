/**
 * GET /v1/clusters/{cluster}/changes: every acknowledged commit after an LSN,
 * in LSN order, as Server-Sent Events (each event's `id` its LSN, so a client
 * resumes with Last-Event-ID) or, with `format=json`, one page to poll. It is
 * a read: the coherent replica nearest the caller serves it when it can, the
 * master otherwise. The stream itself lives in the Worker and survives a
 * node's restart: it asks again from the last LSN it sent.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import { ApiError } from "../../core/errors";
import type { ChangesPage, ChangesRequest } from "../../durable-objects/change-feed";
import { changesPage, pageOrGone } from "../changes/source";
import { sseStream } from "../changes/sse";
import { checkCluster } from "../cluster";
import { requireToken } from "../middleware/auth";
import { DATA_AUTH, errorResponses, json } from "../openapi/responses";
import { type FrontDoor, serve } from "../openapi/route";
import { changeEventSchema, clusterParams } from "../schemas/changes";

export const changes = new OpenAPIHono<FrontDoor>();

changes.use("*", requireToken("data"));

const LSN = /^(0|[1-9][0-9]{0,15})$/;

const query = z.object({
  from: z.string().regex(LSN).optional().describe("Events after this LSN (default 0: all)."),
  table: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .describe("Only these tables' row changes (repeatable); statements are left out."),
  format: z.enum(["sse", "json"]).optional().describe("sse (default) or one json page."),
  limit: z
    .string()
    .regex(/^[1-9][0-9]{0,3}$/)
    .refine((v) => Number(v) <= 1000, "at most 1000")
    .optional()
    .describe("Events per json page, at most 1,000."),
  heartbeat_ms: z
    .string()
    .regex(/^[1-9][0-9]{3,4}$/)
    .refine((v) => Number(v) <= 60_000, "at most 60000")
    .optional()
    .describe("Idle SSE comment interval, 1,000 to 60,000 ms (default 15,000)."),
});

const pageSchema = z.object({
  events: z.array(changeEventSchema),
  next: z.number().int().describe("Ask again with from=next."),
  acknowledged: z.number().int().describe("The highest acknowledged LSN the serving node knew."),
});

serve(
  changes,
  "get",
  "/:cluster/changes",
  {
    operationId: "changes",
    tags: ["data"],
    summary: "The change stream",
    description:
      "Every acknowledged commit after `from`, in LSN order: Server-Sent Events (`id` = LSN, resumable with Last-Event-ID; `: keep-alive` comments when idle) or one JSON page. 410 GONE when the log no longer holds the records after `from`.",
    security: DATA_AUTH,
    request: {
      params: clusterParams,
      query,
      headers: z.object({
        "last-event-id": z.string().regex(LSN).optional().describe("Resume after this LSN (SSE)."),
      }),
    },
    responses: {
      200: {
        description: "text/event-stream of `commit` events, or a JSON page with format=json.",
        content: {
          "text/event-stream": { schema: z.string() },
          ...json(pageSchema, "").content,
        },
      },
      ...errorResponses(["GONE"]),
    },
  },
  (c) => serveChanges(c),
);

function readQuery(c: Context<FrontDoor>) {
  const raw = { ...c.req.query(), table: c.req.queries("table") };
  const parsed = query.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = String(issue?.path[0] ?? "query");
    throw new ApiError("BAD_REQUEST", `${field}: ${issue?.message ?? "invalid"}`, { field });
  }
  return parsed.data;
}

async function serveChanges(c: Context<FrontDoor>): Promise<Response> {
  const cluster = checkCluster(c.env, c.req.param("cluster") ?? "");
  const q = readQuery(c);
  const resumeAt = c.req.header("last-event-id");
  if (resumeAt !== undefined && !LSN.test(resumeAt)) {
    throw new ApiError("BAD_REQUEST", "Last-Event-ID must be an LSN (a decimal integer)", {
      field: "last-event-id",
    });
  }
  const tables = q.table === undefined ? null : [q.table].flat();
  const request: ChangesRequest = {
    cluster,
    after: Number(resumeAt ?? q.from ?? 0),
    limit: Number(q.limit ?? 1000),
    maxBytes: 4 * 1024 * 1024,
    tables,
  };
  const cf = c.req.raw.cf;
  const first = pageOrGone(await changesPage(c.env, request, cf));
  if (q.format === "json") {
    return c.json({ events: first.events, next: first.scanned, acknowledged: first.acknowledged });
  }
  const next = (after: number): Promise<ChangesPage> =>
    changesPage(c.env, { ...request, after, limit: 1000 }, cf);
  return sseStream(first, next, Number(q.heartbeat_ms ?? 15_000));
}
