/**
 * Worker entry: the Hono front door, and the Durable Object classes it binds.
 */
import { app } from "./app";

export { MasterDO } from "../durable-objects/master";
export { ReplicaDO } from "../durable-objects/replica";

export default app;
