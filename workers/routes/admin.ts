/**
 * The admin plane: status, tunables, verify and the fault routes.
 */
import { Hono } from "hono";
import { z } from "zod";
import { ApiError, type Result } from "../../core/errors";
import { isMasterCrash } from "../../core/protocol";
import type { DirectoryRecord } from "../../core/directory-record";
import { applyPatch, defaultTunables, tunablesFromStored } from "../../core/tunables";
import { MEMBER_ID } from "../../core/members";
import { LOCATION_HINTS } from "../../core/placement";
import type { PlacedReplica } from "../../core/status";
import { promoteWithoutMaster } from "../../durable-objects/failover";
import {
  checkCluster,
  forgetMaster,
  forgetReplicaList,
  masterRecord,
  placedMemberStub,
  onMaster,
} from "../cluster";
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
  const placed = (await onMaster(c.env, cluster, (master) =>
    master.placement(cluster),
  )) as PlacedReplica[];
  return c.json({
    replicas: placed.map((r) => r.id),
    locations: Object.fromEntries(placed.map((r) => [r.id, r.location])),
  });
});

/** A new replica may name where it should live (a Durable Object location hint). */
const addReplicaSchema = z.strictObject({
  location: z
    .enum(LOCATION_HINTS, {
      error: `expected a location hint: one of ${LOCATION_HINTS.join(", ")}`,
    })
    .optional(),
});

admin.post("/:cluster/replicas", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  // No body, or {}, adds a replica without a hint, as before placement.
  const body = await validBody(c, addReplicaSchema, {});
  const added = (await onMaster(c.env, cluster, (master) =>
    master.addReplica(cluster, body.location ?? null),
  )) as Result<unknown>;
  forgetReplicaList(cluster);
  if (!added.ok) return errorResponse(c, fromBody(added.error));
  return c.json(added.value, 201);
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
    force: z.boolean().optional(),
  })
  .strict();

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
admin.post("/:cluster/promote", async (c) => {
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
});

/** Fault hook: lose the master (its region gone): it answers nothing until restored. */
admin.post("/:cluster/master/lose", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  const { master } = await faultsAllowed(c.env, cluster);
  await loseOrRestore(c.env, cluster, master, true);
  forgetMaster(cluster);
  return c.json({ lost: master }, 202);
});

/** Fault hook: bring a lost member back; it learns the term from the directory and its peers. */
admin.post("/:cluster/members/:id/restore", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  const id = c.req.param("id");
  if (!MEMBER_ID.test(id)) throw new ApiError("NOT_FOUND", `no member ${id.slice(0, 40)}`);
  await faultsAllowed(c.env, cluster);
  await loseOrRestore(c.env, cluster, id, false);
  forgetMaster(cluster);
  return c.json({ restored: id });
});

/** Fault hook: cut a member off from the others (`{"partitioned": false}` heals); clients still reach it. */
admin.post("/:cluster/members/:id/partition", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  const id = c.req.param("id");
  if (!MEMBER_ID.test(id)) throw new ApiError("NOT_FOUND", `no member ${id.slice(0, 40)}`);
  const body = await validBody(c, z.object({ partitioned: z.boolean() }).strict());
  await faultsAllowed(c.env, cluster);
  await (await placedMemberStub(c.env, cluster, id)).setPartitioned(body.partitioned);
  return c.json({ id, partitioned: body.partitioned });
});

/**
 * Member fault hooks reach nodes that may not be master (or reachable through
 * it): the switch is read from the tunables the master published in the
 * directory.
 */
async function faultsAllowed(env: Env, cluster: string): Promise<DirectoryRecord> {
  const record = await masterRecord(env, cluster, true);
  const rows = Object.entries(record.config?.tunables ?? {}).map(([name, value]) => ({
    name,
    value,
  }));
  if (!tunablesFromStored(rows).debug_fault_injection) {
    throw new ApiError(
      "FORBIDDEN",
      "fault injection is off: set the tunable debug_fault_injection to true first",
    );
  }
  return record;
}

async function loseOrRestore(env: Env, cluster: string, id: string, lost: boolean): Promise<void> {
  try {
    await (await placedMemberStub(env, cluster, id)).setLost(lost);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // The node resets itself to take the change: that reset is this call's answer.
    if (message.includes("through the fault route")) return;
    throw error;
  }
}
