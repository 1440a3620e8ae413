/**
 * Worker entry: the Hono front door (behind its public API description,
 * GET /openapi.json, and the dashboard's static files, GET /admin/ui), and
 * the Durable Object classes it binds.
 */
import { app } from "./app";
import { withDashboard } from "./dashboard/serve";
import { withApiDescription } from "./openapi/document";

export { ClusterDirectory } from "../durable-objects/directory";
export { LibsqlStream } from "../durable-objects/libsql-stream";
export { ClusterNode } from "../durable-objects/node";

export default withDashboard(withApiDescription(app));
