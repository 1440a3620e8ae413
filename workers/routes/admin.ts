/**
 * The admin plane: status, tunables, verify, membership and promotion (the
 * fault routes are in faults.ts, export and import in backup.ts). Each route
 * is served and described in one call (workers/openapi/route.ts), bodies
 * validated with workers/schemas/admin.ts.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { ApiError, type Result } from "../../core/errors";
import { applyPatch, defaultTunables } from "../../core/tunables";
import type { PlacedReplica } from "../../core/status";
import { promoteWithoutMaster } from "../../durable-objects/failover";
import {
  checkCluster,
  forgetMaster,
  forgetReplicaList,
  placedMemberStub,
  onMaster,
} from "../cluster";
import { deleteCluster } from "../cluster-delete";
import { errorResponse, fromBody } from "../errors";
import { requireToken } from "../middleware/auth";
import { readJson, validBody } from "../middleware/json";
import { ADMIN_AUTH, BODY, errorResponses, json } from "../openapi/responses";
import { type FrontDoor, serve } from "../openapi/route";
import {
  addedReplica,
  addReplicaSchema,
  clusterStatus,
  deleteClusterQuery,
  deletedCluster,
  memberParams,
  promoted,
  promoteSchema,
  removedReplica,
  replicaList,
  tunablesList,
  tunablesPatch,
  verifyResult,
} from "../schemas/admin";
import { clusterParams } from "../schemas/data";
import { backup } from "./backup";
import { faults } from "./faults";

export const admin = new OpenAPIHono<FrontDoor>();

admin.use("*", requireToken("admin"));

const body = (schema: Parameters<typeof json>[0], required = true) => ({
  required,
  content: { "application/json": { schema } },
});

serve(
  admin,
  "get",
  "/:cluster/status",
  {
    operationId: "status",
    tags: ["admin"],
    summary: "The master, its waiter, and every replica's state and lag",
    security: ADMIN_AUTH,
    request: { params: clusterParams },
    responses: { 200: json(clusterStatus, "docs/operations.md, Status"), ...errorResponses() },
  },
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    return c.json(await onMaster(c.env, cluster, (master) => master.status(cluster)));
  },
);

serve(
  admin,
  "get",
  "/:cluster/tunables",
  {
    operationId: "getTunables",
    tags: ["admin"],
    summary: "Every tunable with its value, default, type, bounds and description",
    security: ADMIN_AUTH,
    request: { params: clusterParams },
    responses: { 200: json(tunablesList, "Every tunable."), ...errorResponses() },
  },
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    return c.json(await onMaster(c.env, cluster, (master) => master.getTunables(cluster)));
  },
);

serve(
  admin,
  "patch",
  "/:cluster/tunables",
  {
    operationId: "patchTunables",
    tags: ["admin"],
    summary: "Change tunables, all or nothing",
    description:
      "An unknown name or a bad value (or two values that contradict each other) changes nothing.",
    security: ADMIN_AUTH,
    request: { params: clusterParams, body: body(tunablesPatch) },
    responses: {
      200: json(tunablesList, "Every tunable, after the change."),
      ...errorResponses(BODY, ["UNKNOWN_TUNABLE", "INVALID_TUNABLE_VALUE"]),
    },
  },
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const patch = await readJson(c);
    // Refused here with the master's own rules: a deeply nested value would not even
    // cross the RPC to the master (its serialiser overflows), and nothing else needs to.
    applyPatch(defaultTunables(), patch);
    const result = (await onMaster(c.env, cluster, (master) =>
      master.patchTunables(cluster, patch),
    )) as Result<unknown>;
    if (!result.ok) return errorResponse(c, fromBody(result.error));
    return c.json(result.value);
  },
);

serve(
  admin,
  "post",
  "/:cluster/verify",
  {
    operationId: "verify",
    tags: ["admin"],
    summary: "Table checksums on every node, at the master's LSN",
    security: ADMIN_AUTH,
    request: { params: clusterParams },
    responses: { 200: json(verifyResult, "Whether every node agrees."), ...errorResponses() },
  },
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    return c.json(await onMaster(c.env, cluster, (master) => master.verify(cluster)));
  },
);

serve(
  admin,
  "get",
  "/:cluster/replicas",
  {
    operationId: "listReplicas",
    tags: ["admin"],
    summary: "The sanctioned replicas and their location hints",
    security: ADMIN_AUTH,
    request: { params: clusterParams },
    responses: { 200: json(replicaList, "Ids and hints (null: none)."), ...errorResponses() },
  },
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const placed = (await onMaster(c.env, cluster, (master) =>
      master.placement(cluster),
    )) as PlacedReplica[];
    return c.json({
      replicas: placed.map((r) => r.id),
      locations: Object.fromEntries(placed.map((r) => [r.id, r.location])),
    });
  },
);

serve(
  admin,
  "post",
  "/:cluster/replicas",
  {
    operationId: "addReplica",
    tags: ["admin"],
    summary: "Add a replica, optionally with a location hint",
    description:
      "Bootstrapped from a snapshot; it rejoins once caught up. 503 while the last replica added has not caught up (with durable_lsns): retry.",
    security: ADMIN_AUTH,
    request: { params: clusterParams, body: body(addReplicaSchema, false) },
    responses: {
      201: json(addedReplica, "Added."),
      ...errorResponses(BODY),
    },
  },
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    // No body, or {}, adds a replica without a hint, as before placement.
    const body = await validBody(c, addReplicaSchema, {});
    const added = (await onMaster(c.env, cluster, (master) =>
      master.addReplica(cluster, body.location ?? null),
    )) as Result<unknown>;
    forgetReplicaList(cluster);
    if (!added.ok) return errorResponse(c, fromBody(added.error));
    return c.json(added.value, 201);
  },
);

serve(
  admin,
  "delete",
  "/:cluster/replicas/:id",
  {
    operationId: "removeReplica",
    tags: ["admin"],
    summary: "Remove a replica at once",
    description: "Commits finish without it once its lease has expired; its object keeps its data.",
    security: ADMIN_AUTH,
    request: { params: memberParams },
    responses: { 200: json(removedReplica, "Removed."), ...errorResponses() },
  },
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const id = c.req.param("id");
    const result = (await onMaster(c.env, cluster, (master) =>
      master.removeReplica(cluster, id),
    )) as Result<unknown>;
    forgetReplicaList(cluster);
    if (!result.ok) return errorResponse(c, fromBody(result.error));
    return c.json(result.value);
  },
);

serve(
  admin,
  "delete",
  "/:cluster",
  {
    operationId: "deleteCluster",
    tags: ["admin"],
    summary: "Delete a cluster: every member's storage and alarm, then its name",
    description:
      "Irreversible. `confirm` must repeat the cluster's name. Stop its clients first: a request during the deletion fails; one after it creates a new, empty cluster (docs/operations.md, Deleting a cluster).",
    security: ADMIN_AUTH,
    request: { params: clusterParams, query: deleteClusterQuery },
    responses: { 200: json(deletedCluster, "Deleted."), ...errorResponses() },
  },
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    if (c.req.query("confirm") !== cluster) {
      throw new ApiError(
        "BAD_REQUEST",
        `deleting a cluster is irreversible: repeat its name as ?confirm=${cluster}`,
        { cluster },
      );
    }
    return c.json(await deleteCluster(c.env, cluster));
  },
);

/** How long the new master may take to start and commit its term's first record. */
const TAKE_OVER_MS = 10_000;

/**
 * Promotion. By handover when the master answers: it stops taking writes,
 * waits for its commits to be answered and the candidate to ack its last LSN,
 * and names the candidate master of the next term in the directory. Without
 * it when it does not answer (or with `"force": true`): the members are fenced
 * into the next term and the most up-to-date log of a majority is chosen
 * (durable-objects/failover.ts). Answers once the new master has started and
 * committed its term's first record.
 */
serve(
  admin,
  "post",
  "/:cluster/promote",
  {
    operationId: "promote",
    tags: ["admin"],
    summary: "Hand the master role to a replica, or promote without the master",
    description:
      "Answers once the new master has committed its term's first record. 503 when no promotion can be made now; 404 for an unknown replica (docs/operations.md, Promotion).",
    security: ADMIN_AUTH,
    request: { params: clusterParams, body: body(promoteSchema) },
    responses: { 200: json(promoted, "The new master and term."), ...errorResponses(BODY) },
  },
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const body = await validBody(c, promoteSchema);
    let result: Result<{ master: string; term: number }>;
    if (body.force === true) {
      result = await promoteWithoutMaster(c.env, cluster, body.replica);
    } else {
      try {
        result = (await onMaster(c.env, cluster, (master) =>
          master.promote(cluster, body.replica),
        )) as Result<{ master: string; term: number }>;
      } catch (error) {
        // The master did not answer at all (lost, cut off): promote without it.
        console.warn(
          `${cluster}: the master did not answer a promotion; promoting without it`,
          error,
        );
        result = await promoteWithoutMaster(c.env, cluster, body.replica);
      }
    }
    forgetMaster(cluster);
    if (!result.ok) return errorResponse(c, fromBody(result.error));
    const { master, term } = result.value;
    const until = Date.now() + TAKE_OVER_MS;
    for (let attempt = 0; ; attempt++) {
      try {
        const stub = await placedMemberStub(c.env, cluster, master);
        await stub.takeOver(cluster);
        const status = await stub.status(cluster);
        if (status.master.term >= term) return c.json({ master, term });
      } catch (error) {
        if (Date.now() >= until) {
          throw new ApiError(
            "UNAVAILABLE",
            `${master} is master of term ${term} but has not started yet; it takes over on its next call`,
            { retryAfterSeconds: 1, master, term },
            error,
          );
        }
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(200, 20 * (attempt + 1))));
    }
  },
);

// The fault routes and the backup routes, behind the same admin token.
admin.route("/", faults);
admin.route("/", backup);
