/**
 * The fault routes (test only, docs/operations.md, "Fault routes"): refused
 * with 403 unless the tunable debug_fault_injection is on. Mounted inside the
 * admin plane (workers/routes/admin.ts), behind its admin token.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { ApiError, type Result } from "../../core/errors";
import { isMasterCrash } from "../../core/protocol";
import type { DirectoryRecord } from "../../core/directory-record";
import { tunablesFromStored } from "../../core/tunables";
import { MEMBER_ID } from "../../core/members";
import { checkCluster, forgetMaster, masterRecord, placedMemberStub, onMaster } from "../cluster";
import { errorResponse, fromBody } from "../errors";
import { validBody } from "../middleware/json";
import { ADMIN_AUTH, BODY, errorResponses, FAULT, json } from "../openapi/responses";
import { type FrontDoor, type Operation, serve } from "../openapi/route";
import {
  crashSchema,
  delaySchema,
  faultAnswers,
  memberParams,
  messageFaultsSchema,
  partitionSchema,
  rewindSchema,
  tamperSchema,
} from "../schemas/admin";
import { clusterParams } from "../schemas/data";
import type { z } from "zod";

export const faults = new OpenAPIHono<FrontDoor>();

/**
 * A fault route's description: admin token, FORBIDDEN while faults are off,
 * its body if any, and its answer (what the master's fault hook returns).
 */
function fault(
  operationId: string,
  summary: string,
  answer: z.ZodType,
  options: { status?: 200 | 202; member?: boolean; body?: z.ZodType; optionalBody?: boolean } = {},
): Operation {
  const params = options.member === true ? memberParams : clusterParams;
  const body =
    options.body === undefined
      ? {}
      : {
          body: {
            required: options.optionalBody !== true,
            content: { "application/json": { schema: options.body } },
          },
        };
  return {
    operationId,
    tags: ["faults"],
    summary,
    security: ADMIN_AUTH,
    request: { params, ...body },
    responses: {
      [options.status ?? 200]: json(answer, "Done."),
      ...errorResponses(FAULT, options.body === undefined ? [] : BODY),
    },
  };
}

function replicaId(id: string): string {
  if (!MEMBER_ID.test(id)) throw new ApiError("NOT_FOUND", `no replica ${id.slice(0, 40)}`);
  return id;
}

serve(
  faults,
  "post",
  "/:cluster/master/crash",
  fault(
    "crashMaster",
    "Reset the master with ctx.abort(); answered once it has happened",
    faultAnswers.crashed,
    { status: 202 },
  ),
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    let result: Result<unknown>;
    try {
      result = (await onMaster(c.env, cluster, (master) =>
        master.crash(cluster),
      )) as Result<unknown>;
    } catch (error) {
      // The reset throws its reason into this very call: the crash has happened,
      // and the requests it was serving have failed, before the route answers.
      if (isMasterCrash(error)) return c.json({ crashed: true }, 202);
      throw error;
    }
    if (!result.ok) return errorResponse(c, fromBody(result.error));
    return c.json(result.value, 202);
  },
);

serve(
  faults,
  "post",
  "/:cluster/faults",
  fault(
    "setMessageFaults",
    "Faults on every message the master's relays send; {} heals",
    faultAnswers.messages,
    { body: messageFaultsSchema },
  ),
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const body = await validBody(c, messageFaultsSchema);
    const result = (await onMaster(c.env, cluster, (master) =>
      master.setMessageFaults(cluster, body),
    )) as Result<unknown>;
    if (!result.ok) return errorResponse(c, fromBody(result.error));
    return c.json(result.value);
  },
);

serve(
  faults,
  "post",
  "/:cluster/replicas/:id/delay",
  fault(
    "delayReplica",
    "The replica sleeps this long per message (0 ends it)",
    faultAnswers.delayed,
    { member: true, body: delaySchema },
  ),
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const id = replicaId(c.req.param("id"));
    const body = await validBody(c, delaySchema);
    const result = (await onMaster(c.env, cluster, (master) =>
      master.setReplicaDelay(cluster, id, body.ms),
    )) as Result<unknown>;
    if (!result.ok) return errorResponse(c, fromBody(result.error));
    return c.json(result.value);
  },
);

serve(
  faults,
  "post",
  "/:cluster/replicas/:id/crash",
  fault(
    "crashReplica",
    "Reset the replica, at once or partway through its next batch",
    faultAnswers.replicaCrashed,
    { status: 202, member: true, body: crashSchema, optionalBody: true },
  ),
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const id = replicaId(c.req.param("id"));
    // The body is optional: no body crashes the replica at once.
    const body =
      (await c.req.text()).trim() === "" ? crashSchema.parse({}) : await validBody(c, crashSchema);
    const result = (await onMaster(c.env, cluster, (master) =>
      master.crashReplica(cluster, id, body.midBatch),
    )) as Result<unknown>;
    if (!result.ok) return errorResponse(c, fromBody(result.error));
    return c.json(result.value, 202);
  },
);

/** Change a replica's rows behind the log's back (to prove divergence is caught). */
serve(
  faults,
  "post",
  "/:cluster/replicas/:id/tamper",
  fault("tamperReplica", "Run SQL on one replica behind the log's back", faultAnswers.tampered, {
    member: true,
    body: tamperSchema,
  }),
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const id = replicaId(c.req.param("id"));
    const body = await validBody(c, tamperSchema);
    const result = (await onMaster(c.env, cluster, (master) =>
      master.tamperReplica(cluster, id, body.sql),
    )) as Result<unknown>;
    if (!result.ok) return errorResponse(c, fromBody(result.error));
    return c.json(result.value);
  },
);

serve(
  faults,
  "post",
  "/:cluster/replicas/:id/rewind",
  fault("rewindRelay", "The replica's relay resends from lsn + 1", faultAnswers.rewound, {
    member: true,
    body: rewindSchema,
  }),
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const id = c.req.param("id");
    const body = await validBody(c, rewindSchema);
    const result = (await onMaster(c.env, cluster, (master) =>
      master.rewindRelay(cluster, id, body.lsn),
    )) as Result<unknown>;
    if (!result.ok) return errorResponse(c, fromBody(result.error));
    return c.json(result.value);
  },
);

serve(
  faults,
  "post",
  "/:cluster/replicas/:id/:action{disconnect|connect}",
  fault("replicaLink", "Cut the master's link to the replica, or restore it", faultAnswers.link, {
    member: true,
  }),
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const id = c.req.param("id");
    const result = (await onMaster(c.env, cluster, (master) =>
      master.setReplicaDisconnected(cluster, id, c.req.param("action") === "disconnect"),
    )) as Result<unknown>;
    if (!result.ok) return errorResponse(c, fromBody(result.error));
    return c.json(result.value);
  },
);

serve(
  faults,
  "post",
  "/:cluster/replicas/:id/:action{stop|start}",
  fault(
    "replica",
    "Stop the replica (it refuses every message and read), or start it",
    faultAnswers.stopped,
    { member: true },
  ),
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const id = replicaId(c.req.param("id"));
    const stopped = c.req.param("action") === "stop";
    const result = (await onMaster(c.env, cluster, (master) =>
      master.setReplicaStopped(cluster, id, stopped),
    )) as Result<unknown>;
    if (!result.ok) return errorResponse(c, fromBody(result.error));
    return c.json(result.value);
  },
);

/** Lose the master (its region gone): it answers nothing until restored. */
serve(
  faults,
  "post",
  "/:cluster/master/lose",
  fault(
    "loseMaster",
    "The master is lost: it answers and sends nothing until restored",
    faultAnswers.lost,
    { status: 202 },
  ),
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const { master } = await faultsAllowed(c.env, cluster);
    await loseOrRestore(c.env, cluster, master, true);
    forgetMaster(cluster);
    return c.json({ lost: master }, 202);
  },
);

/** Bring a lost member back; it learns the term from the directory and its peers. */
serve(
  faults,
  "post",
  "/:cluster/members/:id/restore",
  fault("restoreMember", "Bring a lost member back", faultAnswers.restored, { member: true }),
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const id = c.req.param("id");
    if (!MEMBER_ID.test(id)) throw new ApiError("NOT_FOUND", `no member ${id.slice(0, 40)}`);
    await faultsAllowed(c.env, cluster);
    await loseOrRestore(c.env, cluster, id, false);
    forgetMaster(cluster);
    return c.json({ restored: id });
  },
);

/** Cut a member off from the others (`{"partitioned": false}` heals); clients still reach it. */
serve(
  faults,
  "post",
  "/:cluster/members/:id/partition",
  fault(
    "partitionMember",
    "Cut a member off from the other members; clients still reach it",
    faultAnswers.partitioned,
    { member: true, body: partitionSchema },
  ),
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const id = c.req.param("id");
    if (!MEMBER_ID.test(id)) throw new ApiError("NOT_FOUND", `no member ${id.slice(0, 40)}`);
    const body = await validBody(c, partitionSchema);
    await faultsAllowed(c.env, cluster);
    await (await placedMemberStub(c.env, cluster, id)).setPartitioned(body.partitioned);
    return c.json({ id, partitioned: body.partitioned });
  },
);

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
