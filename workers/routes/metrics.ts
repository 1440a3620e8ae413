/**
 * GET /metrics: Prometheus text for one cluster (`?cluster=`, default `main`),
 * rendered by the master that owns the counters. Needs the admin token. The
 * metrics themselves are listed in docs/operations.md, "Metrics".
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { CLUSTER_NAME, checkCluster, onMaster } from "../cluster";
import { requireToken } from "../middleware/auth";
import { ADMIN_AUTH, errorResponses } from "../openapi/responses";
import { type FrontDoor, serve } from "../openapi/route";

export const PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

export const metrics = new OpenAPIHono<FrontDoor>();

metrics.use("*", requireToken("admin"));

serve(
  metrics,
  "get",
  "/",
  {
    operationId: "metrics",
    tags: ["metrics"],
    summary: "Prometheus metrics of one cluster",
    description:
      "Prometheus text exposition format 0.0.4, rendered by the cluster's master; counters reset when it restarts (docs/operations.md, Metrics).",
    security: ADMIN_AUTH,
    request: {
      query: z.object({
        cluster: z.string().regex(CLUSTER_NAME).default("main").describe("The cluster."),
      }),
    },
    responses: {
      200: {
        description: "Prometheus text.",
        content: { [PROMETHEUS_TEXT]: { schema: z.string() } },
      },
      ...errorResponses(),
    },
  },
  async (c) => {
    const cluster = checkCluster(c.env, c.req.query("cluster") ?? "main");
    const text = await onMaster(c.env, cluster, (master) => master.metricsText(cluster));
    return c.text(text, 200, { "content-type": PROMETHEUS_TEXT });
  },
);
