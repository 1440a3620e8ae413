/**
 * GET /metrics: Prometheus text for one cluster (`?cluster=`, default `main`),
 * rendered by the master that owns the counters. Needs the admin token.
 */
import { Hono } from "hono";
import { checkCluster, onMaster } from "../cluster";
import { requireToken } from "../middleware/auth";

export const metrics = new Hono<{ Bindings: Env }>();

metrics.use("*", requireToken("admin"));

metrics.get("/", async (c) => {
  const cluster = checkCluster(c.env, c.req.query("cluster") ?? "main");
  const text = await onMaster(c.env, cluster, (master) => master.metricsText(cluster));
  return c.text(text, 200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
});
