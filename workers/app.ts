/**
 * The front door: one Hono app composed from route modules, with one error
 * handler that turns every failure into shared/API.md's error body.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { ApiError } from "../core/errors";
import { errorResponse, toApiError } from "./errors";
import { admin } from "./routes/admin";
import { changes } from "./routes/changes";
import { data } from "./routes/data";
import { libsql } from "./routes/libsql";
import { metrics } from "./routes/metrics";
import type { FrontDoor } from "./openapi/route";

/** An OpenAPIHono, so each route module mounted here brings its paths into GET /openapi.json. */
export const app = new OpenAPIHono<FrontDoor>();

app.get("/", (c) =>
  c.json({
    name: "dosqlite-cluster",
    routes: [
      "POST /v1/clusters/{cluster}/exec",
      "POST /v1/clusters/{cluster}/tables/{table}/rows",
      "POST /v1/clusters/{cluster}/query",
      "GET /v1/clusters/{cluster}/changes?from={lsn} (Server-Sent Events)",
      "GET /admin/clusters/{cluster}/status",
      "GET|PATCH /admin/clusters/{cluster}/tunables",
      "POST /admin/clusters/{cluster}/verify",
      "GET /admin/clusters/{cluster}/export (a SQL dump at one LSN)",
      "POST /admin/clusters/{cluster}/import (a dump, into an empty cluster)",
      "GET /metrics?cluster={cluster}",
      "GET /admin/ui (the dashboard: a static page that asks for the admin token)",
      "POST /libsql/{cluster}/v2/pipeline (libSQL: @libsql/client with URL …/libsql/{cluster}/)",
    ],
  }),
);

app.route("/v1/clusters", data);
app.route("/v1/clusters", changes);
app.route("/admin/clusters", admin);
app.route("/metrics", metrics);
app.route("/libsql", libsql);

app.notFound((c) =>
  errorResponse(
    c,
    new ApiError("NOT_FOUND", `no route for ${c.req.method} ${new URL(c.req.url).pathname}`),
  ),
);

app.onError((error, c) => errorResponse(c, toApiError(error)));
