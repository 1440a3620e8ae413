/**
 * Where a read goes: a replica pinned by the caller (never elsewhere), the
 * master when pinned to it, else the coherent replica nearest the caller,
 * falling back to the master when that replica cannot serve it.
 */
import { ApiError, type Result } from "../core/errors";
import { MASTER_ALIAS } from "../core/members";
import type { QueryRequest, QueryResponse, ReplicaQueryOutcome } from "../core/protocol";
import { masterRecord, memberStub, nearestReplica, onMaster, placedReplicas } from "./cluster";
import { toApiError } from "./errors";

export async function routeRead(
  env: Env,
  request: QueryRequest,
  cf: unknown,
  pin?: string,
): Promise<Result<QueryResponse>> {
  const { cluster } = request;
  const onTheMaster = () =>
    onMaster(env, cluster, (master) => master.query(request)) as Promise<Result<QueryResponse>>;
  // A read pinned to the member that is master now is the master's to serve.
  const pinnedToMaster =
    pin === MASTER_ALIAS ||
    (pin !== undefined && pin === (await masterRecord(env, cluster)).master);
  if (pinnedToMaster) return onTheMaster();
  if (pin !== undefined) {
    const pinned = (await placedReplicas(env, cluster)).find((r) => r.id === pin);
    if (pinned === undefined) throw new ApiError("NOT_FOUND", `no ${pin} in cluster ${cluster}`);
    const outcome = (await memberStub(env, cluster, pinned.id, pinned.location).replicaQuery(
      request,
      pin,
    )) as ReplicaQueryOutcome;
    if (outcome.kind === "rows") return { ok: true, value: outcome.response };
    if (outcome.kind === "error") return { ok: false, error: outcome.error };
    throw new ApiError("UNAVAILABLE", `${pin} cannot serve this read: ${outcome.reason}`, {
      retryAfterSeconds: 1,
      reason: outcome.reason,
    });
  }
  const nearest = await nearestReplica(env, cluster, cf, request.consistency);
  if (nearest !== null) {
    try {
      const outcome = (await memberStub(env, cluster, nearest.id, nearest.location).replicaQuery(
        request,
        nearest.id,
      )) as ReplicaQueryOutcome;
      if (outcome.kind === "rows") return { ok: true, value: outcome.response };
      if (outcome.kind === "error") return { ok: false, error: outcome.error };
    } catch (error) {
      // An unreachable replica is no reason to fail a read: the master serves it.
      console.warn(
        `read on ${nearest.id} failed, falling back to the master`,
        toApiError(error).message,
      );
    }
  }
  return onTheMaster();
}
