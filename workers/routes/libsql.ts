/**
 * libSQL's protocol (Hrana over HTTP v2, JSON) for a cluster, at the base URL
 * `/libsql/{cluster}/`: `@libsql/client` (and Drizzle, Kysely through it)
 * with that URL and a data token works unchanged. A base URL may name a read
 * consistency, `/libsql/{cluster}/{strong|bookmark|any}/`; so may the
 * `X-Consistency` header, with `X-Bookmark` for `bookmark`. Errors of the
 * request itself are `{message, code}` as exactly `application/json`, the
 * only form the client reads a message from.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import { ApiError } from "../../core/errors";
import { signBaton, verifyBaton } from "../../core/hrana/baton";
import {
  hranaError,
  type PipelineBody,
  pipelineBody,
  pipelineResponse,
} from "../../core/hrana/proto";
import { stringifyHrana } from "../../core/hrana/values";
import { sha256Hex } from "../../core/sha256";
import { toHranaError } from "../../core/hrana/translate";
import { type Consistency, decodeBookmark } from "../../core/protocol";
import type { LibsqlStream, StreamAnswer } from "../../durable-objects/libsql-stream";
import { checkCluster } from "../cluster";
import { toApiError } from "../errors";
import {
  newStreamState,
  type PipelineContext,
  type PipelineOutcome,
  runPipeline,
} from "../libsql/pipeline";
import { checkToken } from "../middleware/auth";
import { readJson } from "../middleware/json";
import { DATA_AUTH } from "../openapi/responses";
import { type FrontDoor, type Operation, serve } from "../openapi/route";
import { clusterParams, idempotencyKeySchema } from "../schemas/data";
import { idempotencyKey } from "./data";

export const libsql = new OpenAPIHono<FrontDoor>();

const CONSISTENCIES = new Set(["strong", "bookmark", "any"]);

function hranaJson(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  // Exactly application/json: @libsql/client reads an error's message only then.
  return new Response(stringifyHrana(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

function hranaFailure(error: unknown): Response {
  const api = toApiError(error);
  const headers: Record<string, string> =
    api.status === 503 ? { "retry-after": String(api.details?.retryAfterSeconds ?? 1) } : {};
  return hranaJson(api.status, toHranaError(api.toBody()), headers);
}

const noSlash = () =>
  hranaFailure(
    new ApiError(
      "BAD_REQUEST",
      "the libSQL URL must end with a slash, http://<host>/libsql/<cluster>/ : without it the " +
        "client drops the cluster's name from every request. Nothing was run.",
      { hranaCode: "URL_INVALID" },
    ),
  );

// A base URL that lost its trailing slash resolves `v2/pipeline` one level up.
libsql.all("/v2", noSlash);
libsql.all("/v2/*", noSlash);

const consistencyParams = clusterParams.extend({
  consistency: z
    .enum(["strong", "bookmark", "any"])
    .describe("The reads' consistency for every request through this base URL."),
});

/** Errors of the request itself, in Hrana's shape: `{message, code}`, exactly application/json. */
const hranaErrors = Object.fromEntries(
  [
    [400, "A malformed body, an invalid baton, or a base URL without its trailing slash."],
    [401, "No token, or a wrong one."],
    [404, "No such cluster, route or consistency."],
    [413, "The body is too large."],
    [503, "The cluster cannot answer now; retry (with the same Idempotency-Key)."],
  ].map(([status, description]) => [
    String(status),
    { description, content: { "application/json": { schema: hranaError } } },
  ]),
);

const version = (params: typeof clusterParams): Operation => ({
  tags: ["libsql"],
  summary: "libSQL protocol version check",
  description: "Answers 200 with an empty body: this base URL speaks Hrana over HTTP v2.",
  security: DATA_AUTH,
  request: { params },
  responses: { 200: { description: "Hrana over HTTP v2 is spoken here." }, ...hranaErrors },
});

const pipelineOperation = (params: typeof clusterParams): Operation => ({
  tags: ["libsql"],
  summary: "A Hrana pipeline (what @libsql/client sends)",
  description:
    "libSQL's HTTP_V2_SPEC: the stream's requests in order, one result each. A batch or any " +
    "write runs on the master as one replicated transaction; plain queries go to replicas.",
  security: DATA_AUTH,
  request: {
    params,
    headers: z.object({
      "idempotency-key": idempotencyKeySchema
        .optional()
        .describe(
          "Makes the pipeline retry-safe: a retry with the same key and body gets the same answer.",
        ),
      "x-consistency": z.enum(["strong", "bookmark", "any"]).optional(),
      "x-bookmark": z
        .string()
        .optional()
        .describe("With bookmark consistency: a write's bookmark."),
    }),
    body: { required: true, content: { "application/json": { schema: pipelineBody } } },
  },
  responses: {
    200: {
      description: "One result per request; X-Bookmark names the commit when the pipeline wrote.",
      content: { "application/json": { schema: pipelineResponse } },
    },
    ...hranaErrors,
  },
});

serve(
  libsql,
  "get",
  "/:cluster/v2",
  { ...version(clusterParams), operationId: "libsqlVersion" },
  (c) => versionCheck(c),
);
serve(
  libsql,
  "get",
  "/:cluster/:consistency/v2",
  { ...version(consistencyParams), operationId: "libsqlVersionAt" },
  (c) => versionCheck(c),
);
serve(
  libsql,
  "post",
  "/:cluster/v2/pipeline",
  { ...pipelineOperation(clusterParams), operationId: "libsqlPipeline" },
  (c) => pipeline(c, undefined),
);
serve(
  libsql,
  "post",
  "/:cluster/:consistency/v2/pipeline",
  { ...pipelineOperation(consistencyParams), operationId: "libsqlPipelineAt" },
  (c) => pipeline(c, c.req.param("consistency")),
);
libsql.all("/*", (c) =>
  hranaFailure(
    new ApiError(
      "NOT_FOUND",
      `no libSQL route for ${c.req.method} ${new URL(c.req.url).pathname}: this server speaks ` +
        "Hrana over HTTP v2 (POST …/v2/pipeline)",
      { hranaCode: "NOT_FOUND" },
    ),
  ),
);

async function versionCheck(c: Context<{ Bindings: Env }>): Promise<Response> {
  try {
    checkToken(c.env, c.req.header("authorization"), "data");
    checkCluster(c.env, c.req.param("cluster") ?? "");
    const consistency = c.req.param("consistency");
    if (consistency !== undefined && !CONSISTENCIES.has(consistency))
      return noSuchConsistency(consistency);
    return new Response("", { status: 200 });
  } catch (error) {
    return hranaFailure(error);
  }
}

function noSuchConsistency(given: string): Response {
  return hranaFailure(
    new ApiError(
      "NOT_FOUND",
      `no libSQL route here: "${given.slice(0, 40)}" is not a consistency (strong, bookmark or any)`,
      { hranaCode: "NOT_FOUND" },
    ),
  );
}

function batonSecret(env: Env): string {
  const secret = env.ADMIN_TOKEN;
  if (secret === undefined || secret === "") {
    throw new ApiError("MISCONFIGURED", "ADMIN_TOKEN is not set: batons cannot be signed");
  }
  return secret;
}

/** Deep enough for any condition a client writes (they are checked to 32), shallow enough to validate. */
const MAX_DEPTH = 100;

/** Whether a parsed JSON value nests deeper than `limit`, measured without recursion. */
function nestedDeeperThan(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (typeof v !== "object" || v === null) continue;
    if (depth > limit) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

function readContext(
  c: Context<{ Bindings: Env }>,
  cluster: string,
  fromPath: string | undefined,
): Pick<PipelineContext, "consistency" | "minLsn"> {
  const chosen = c.req.header("x-consistency") ?? fromPath ?? "strong";
  if (!CONSISTENCIES.has(chosen)) {
    throw new ApiError("BAD_REQUEST", `X-Consistency must be strong, bookmark or any`, {
      hranaCode: "CONSISTENCY_INVALID",
    });
  }
  const consistency = chosen as Consistency;
  if (consistency !== "bookmark") return { consistency, minLsn: 0 };
  const header = c.req.header("x-bookmark");
  const lsn = header === undefined ? null : decodeBookmark(header);
  if (lsn === null) {
    throw new ApiError(
      "BAD_REQUEST",
      `consistency "bookmark" needs X-Bookmark: the bookmark a write to ${cluster} returned`,
      { hranaCode: "BOOKMARK_INVALID" },
    );
  }
  return { consistency, minLsn: lsn };
}

async function pipeline(
  c: Context<{ Bindings: Env }>,
  consistencyInPath: string | undefined,
): Promise<Response> {
  try {
    checkToken(c.env, c.req.header("authorization"), "data");
    const cluster = checkCluster(c.env, c.req.param("cluster") ?? "");
    if (consistencyInPath !== undefined && !CONSISTENCIES.has(consistencyInPath)) {
      return noSuchConsistency(consistencyInPath);
    }
    const raw = await readJson(c);
    if (nestedDeeperThan(raw, MAX_DEPTH)) {
      throw new ApiError("BAD_REQUEST", `the pipeline body nests deeper than ${MAX_DEPTH} levels`, {
        hranaCode: "PROTO_ERROR",
      });
    }
    const parsed = pipelineBody.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const path = issue?.path.length ? issue.path.join(".") : "body";
      throw new ApiError("BAD_REQUEST", `${path}: ${issue?.message ?? "invalid"}`, {
        hranaCode: "PROTO_ERROR",
      });
    }
    const body: PipelineBody = parsed.data;
    const key = idempotencyKey(c.req.header("idempotency-key"));
    const context: PipelineContext = {
      cluster,
      ...readContext(c, cluster, consistencyInPath),
      ...(key === undefined
        ? {}
        : {
            idempotencyKey: key,
            requestHash: sha256Hex(
              `libsql\n${cluster}\n${body.baton ?? ""}\n${JSON.stringify(body.requests)}`,
            ),
          }),
      cf: c.req.raw.cf,
    };
    const secret = batonSecret(c.env);
    const last = body.requests[body.requests.length - 1];
    if (!body.baton && last?.type === "close") {
      // The stream opens and closes in this request: nothing outlives it.
      const outcome = await runPipeline(c.env, context, newStreamState(), body.requests);
      return respond(outcome, null);
    }
    const ns = c.env.LIBSQL_STREAM as unknown as DurableObjectNamespace<LibsqlStream>;
    let stream: DurableObjectId;
    let seq = 0;
    if (body.baton) {
      const baton = await verifyBaton(secret, cluster, body.baton);
      if (baton === null) {
        throw new ApiError("BAD_REQUEST", "the baton is not valid for this cluster", {
          hranaCode: "BATON_INVALID",
        });
      }
      stream = ns.idFromString(baton.stream);
      seq = baton.seq;
    } else stream = ns.newUniqueId();
    const answer = (await ns
      .get(stream)
      .pipeline(context, seq, JSON.stringify(body), body.requests)) as StreamAnswer;
    if (answer.kind === "error") throw ApiError.fromBody(answer.error);
    const next = answer.closed
      ? null
      : await signBaton(secret, cluster, { stream: stream.toString(), seq: answer.seq });
    return respond(answer.outcome, next);
  } catch (error) {
    return hranaFailure(error);
  }
}

function respond(outcome: PipelineOutcome, baton: string | null): Response {
  const headers: Record<string, string> = {};
  if (outcome.bookmark !== null) headers["x-bookmark"] = outcome.bookmark;
  if (outcome.servedBy.length > 0) headers["x-served-by"] = outcome.servedBy.join(",");
  return hranaJson(200, { baton, base_url: null, results: outcome.results }, headers);
}
