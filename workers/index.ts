/**
 * Worker entry: the Hono front door (behind its public API description,
 * GET /openapi.json), and the Durable Object classes it binds.
 */
import { app } from "./app";
import { withApiDescription } from "./openapi/document";

export { ClusterDirectory } from "../durable-objects/directory";
export { LibsqlStream } from "../durable-objects/libsql-stream";
export { ClusterNode } from "../durable-objects/node";

export default withApiDescription(app);
