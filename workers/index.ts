/**
 * Worker entry: the Hono front door, and the Durable Object classes it binds.
 */
import { app } from "./app";

export { ClusterDirectory } from "../durable-objects/directory";
export { LibsqlStream } from "../durable-objects/libsql-stream";
export { ClusterNode } from "../durable-objects/node";

export default app;
