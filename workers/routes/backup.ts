/**
 * Backups (docs/operations.md, "Backups and restore"): GET …/export streams a
 * `sqlite3 .dump`-style SQL text of every user object at one LSN;
 * POST …/import loads such a dump into an empty cluster. Mounted inside the
 * admin plane (workers/routes/admin.ts), behind its admin token.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { ApiError } from "../../core/errors";
import { DUMP_CONTENT_TYPE, exportResponse } from "../backup/export-stream";
import { DumpImport } from "../backup/import-run";
import { checkCluster } from "../cluster";
import { ADMIN_AUTH, errorResponses, json, WRITE } from "../openapi/responses";
import { type FrontDoor, serve } from "../openapi/route";
import { exportQuery, importHeaders, importResult } from "../schemas/backup";
import { clusterParams, idempotencyKeySchema } from "../schemas/data";

export const backup = new OpenAPIHono<FrontDoor>();

const dump = z.string().describe("SQL text in the format of sqlite3 .dump.");

serve(
  backup,
  "get",
  "/:cluster/export",
  {
    operationId: "export",
    tags: ["admin"],
    summary: "A SQL dump of every user object at one LSN, streamed",
    description:
      "In the format of `sqlite3 .dump --preserve-rowids`, values exact; `sqlite3 new.db < dump.sql` loads it. " +
      "The snapshot's LSN is in X-Snapshot-Lsn and at the top of the dump; a dump cut short has no COMMIT.",
    security: ADMIN_AUTH,
    request: { params: clusterParams, query: exportQuery },
    responses: {
      200: {
        description: "The dump.",
        headers: {
          "X-Snapshot-Lsn": {
            description: "The LSN the dump is the state at.",
            schema: { type: "integer" },
          },
          "X-Export-Rows": {
            description: "Rows the dump holds, every table together.",
            schema: { type: "integer" },
          },
        },
        content: { [DUMP_CONTENT_TYPE]: { schema: dump } },
      },
      ...errorResponses(),
    },
  },
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const query = exportQuery.safeParse({ progress: c.req.query("progress") });
    if (!query.success) {
      throw new ApiError("BAD_REQUEST", "progress: expected 0, 1, true or false", {
        field: "progress",
      });
    }
    const progress = query.data.progress === "1" || query.data.progress === "true";
    return exportResponse(c.env, cluster, {
      progress,
      waitUntil: (promise) => c.executionCtx.waitUntil(promise),
    });
  },
);

serve(
  backup,
  "post",
  "/:cluster/import",
  {
    operationId: "import",
    tags: ["admin"],
    summary: "Load a SQL dump into an empty cluster",
    description:
      "The body (streamed, any size) is a dump such as GET …/export writes, loaded as ordinary replicated commits " +
      "in batches. 409 NOT_EMPTY, with nothing written, if the cluster holds any user table, view, index or trigger. " +
      "A statement that fails is a 400 naming it; the batches before it stay committed.",
    security: ADMIN_AUTH,
    request: {
      params: clusterParams,
      headers: importHeaders,
      body: { required: true, content: { [DUMP_CONTENT_TYPE]: { schema: dump } } },
    },
    responses: {
      200: json(importResult, "Loaded: the LSN reached, statements and rows."),
      ...errorResponses(WRITE, ["NOT_EMPTY"]),
    },
  },
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const header = c.req.header("idempotency-key");
    if (header !== undefined && !idempotencyKeySchema.safeParse(header).success) {
      throw new ApiError(
        "BAD_REQUEST",
        "Idempotency-Key must be 1-128 printable ASCII characters without spaces",
        { field: "Idempotency-Key" },
      );
    }
    const run = await DumpImport.start(c.env, cluster, header);
    return c.json(await run.run(c.req.raw.body));
  },
);
