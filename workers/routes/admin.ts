/**
 * The admin plane: status, tunables, verify and the fault routes.
 */
import { Hono } from "hono";
import { z } from "zod";
import { ApiError, type Result } from "../../core/errors";
import { isMasterCrash } from "../../core/protocol";
import { applyPatch, defaultTunables } from "../../core/tunables";
import { MEMBER_ID } from "../../core/members";
import { checkCluster, forgetMaster, forgetReplicaList, memberStub, onMaster } from "../cluster";
import { errorResponse, fromBody } from "../errors";
import { requireToken } from "../middleware/auth";
import { readJson, validBody } from "../middleware/json";

export const admin = new Hono<{ Bindings: Env }>();

admin.use("*", requireToken("admin"));

admin.get("/:cluster/status", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  return c.json(await onMaster(c.env, cluster, (master) => master.status(cluster)));
});

admin.get("/:cluster/tunables", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  return c.json(await onMaster(c.env, cluster, (master) => master.getTunables(cluster)));
});

admin.patch("/:cluster/tunables", async (c) => {
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
});

admin.post("/:cluster/verify", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  return c.json(await onMaster(c.env, cluster, (master) => master.verify(cluster)));
});

admin.post("/:cluster/master/crash", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  let result: Result<unknown>;
  try {
    result = (await onMaster(c.env, cluster, (master) => master.crash(cluster))) as Result<unknown>;
  } catch (error) {
    // The reset throws its reason into this very call: the crash has happened,
    // and the requests it was serving have failed, before the route answers.
    if (isMasterCrash(error)) return c.json({ crashed: true }, 202);
    throw error;
  }
  if (!result.ok) return errorResponse(c, fromBody(result.error));
  return c.json(result.value, 202);
});

const probability = z.number().min(0).max(1).default(0);

/** Test-only relay message faults; `{}` (every probability 0) heals. */
const messageFaultsSchema = z.strictObject({
  seed: z.number().int().min(0).max(0xffffffff).default(0),
  drop: probability,
  delay: probability,
  delayMs: z.number().int().min(0).max(10_000).default(50),
  duplicate: probability,
  reorder: probability,
});

admin.post("/:cluster/faults", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  const body = await validBody(c, messageFaultsSchema);
  const result = (await onMaster(c.env, cluster, (master) =>
    master.setMessageFaults(cluster, body),
  )) as Result<unknown>;
  if (!result.ok) return errorResponse(c, fromBody(result.error));
  return c.json(result.value);
});

admin.get("/:cluster/replicas", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  return c.json({
    replicas: await onMaster(c.env, cluster, (master) => master.replicaIds(cluster)),
  });
});

admin.post("/:cluster/replicas", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  const added = await onMaster(c.env, cluster, (master) => master.addReplica(cluster));
  forgetReplicaList(cluster);
  return c.json(added, 201);
});

admin.delete("/:cluster/replicas/:id", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  const id = c.req.param("id");
  const result = (await onMaster(c.env, cluster, (master) =>
    master.removeReplica(cluster, id),
  )) as Result<unknown>;
  forgetReplicaList(cluster);
  if (!result.ok) return errorResponse(c, fromBody(result.error));
  return c.json(result.value);
});

admin.post("/:cluster/replicas/:id/delay", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  const id = c.req.param("id");
  if (!MEMBER_ID.test(id)) throw new ApiError("NOT_FOUND", `no replica ${id.slice(0, 40)}`);
  const body = await validBody(c, z.strictObject({ ms: z.number().int().min(0).max(60_000) }));
  const result = (await onMaster(c.env, cluster, (master) =>
    master.setReplicaDelay(cluster, id, body.ms),
  )) as Result<unknown>;
  if (!result.ok) return errorResponse(c, fromBody(result.error));
  return c.json(result.value);
});

admin.post("/:cluster/replicas/:id/crash", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  const id = c.req.param("id");
  if (!MEMBER_ID.test(id)) throw new ApiError("NOT_FOUND", `no replica ${id.slice(0, 40)}`);
  // The body is optional: no body crashes the replica at once.
  const schema = z.strictObject({ midBatch: z.boolean().default(false) });
  const body = (await c.req.text()).trim() === "" ? schema.parse({}) : await validBody(c, schema);
  const result = (await onMaster(c.env, cluster, (master) =>
    master.crashReplica(cluster, id, body.midBatch),
  )) as Result<unknown>;
  if (!result.ok) return errorResponse(c, fromBody(result.error));
  return c.json(result.value, 202);
});

/** Fault route: change a replica's rows behind the log's back (to prove divergence is caught). */
admin.post("/:cluster/replicas/:id/tamper", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  const id = c.req.param("id");
  if (!MEMBER_ID.test(id)) throw new ApiError("NOT_FOUND", `no replica ${id.slice(0, 40)}`);
  const body = await validBody(c, z.strictObject({ sql: z.string().min(1).max(10_000) }));
  const result = (await onMaster(c.env, cluster, (master) =>
    master.tamperReplica(cluster, id, body.sql),
  )) as Result<unknown>;
  if (!result.ok) return errorResponse(c, fromBody(result.error));
  return c.json(result.value);
});

admin.post("/:cluster/replicas/:id/rewind", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  const id = c.req.param("id");
  const body = await validBody(c, z.strictObject({ lsn: z.number().int().min(0) }));
  const result = (await onMaster(c.env, cluster, (master) =>
    master.rewindRelay(cluster, id, body.lsn),
  )) as Result<unknown>;
  if (!result.ok) return errorResponse(c, fromBody(result.error));
  return c.json(result.value);
});

admin.post("/:cluster/replicas/:id/:action{disconnect|connect}", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  const id = c.req.param("id");
  const result = (await onMaster(c.env, cluster, (master) =>
    master.setReplicaDisconnected(cluster, id, c.req.param("action") === "disconnect"),
  )) as Result<unknown>;
  if (!result.ok) return errorResponse(c, fromBody(result.error));
  return c.json(result.value);
});

admin.post("/:cluster/replicas/:id/:action{stop|start}", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  const id = c.req.param("id");
  if (!MEMBER_ID.test(id)) throw new ApiError("NOT_FOUND", `no replica ${id.slice(0, 40)}`);
  const stopped = c.req.param("action") === "stop";
  const result = (await onMaster(c.env, cluster, (master) =>
    master.setReplicaStopped(cluster, id, stopped),
  )) as Result<unknown>;
  if (!result.ok) return errorResponse(c, fromBody(result.error));
  return c.json(result.value);
});

const promoteSchema = z
  .object({
    replica: z.string().regex(MEMBER_ID, "expected a member id such as replica-2").optional(),
  })
  .strict();

/** How long the new master may take to start and commit its term's first record. */
const TAKE_OVER_MS = 10_000;

/**
 * Promotion by handover: the master stops taking writes, waits for its
 * commits to be answered and the candidate to ack its last LSN, and names the
 * candidate master of the next term in the directory; the candidate takes
 * over and commits the term's first record. Answers once it has.
 */
admin.post("/:cluster/promote", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  const body = await validBody(c, promoteSchema);
  const result = (await onMaster(c.env, cluster, (master) =>
    master.promote(cluster, body.replica),
  )) as Result<{ master: string; term: number }>;
  forgetMaster(cluster);
  if (!result.ok) return errorResponse(c, fromBody(result.error));
  const { master, term } = result.value;
  const until = Date.now() + TAKE_OVER_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      await memberStub(c.env, cluster, master).takeOver(cluster);
      const status = await memberStub(c.env, cluster, master).status(cluster);
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
});
