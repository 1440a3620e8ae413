/**
 * Which clusters exist and how to reach their objects. The topology comes from
 * wrangler vars: CLUSTERS ("*" = any valid name is created on first use, or a
 * comma-separated list) and DEFAULT_REPLICAS.
 */
import { ApiError } from "../core/errors";
import { masterObjectName, replicaId, replicaObjectName } from "../core/protocol";
import type { MasterDO } from "../durable-objects/master";
import type { ReplicaDO } from "../durable-objects/replica";

export const CLUSTER_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export function checkCluster(env: Env, cluster: string): string {
  if (!CLUSTER_NAME.test(cluster)) {
    throw new ApiError(
      "BAD_REQUEST",
      "a cluster name is 1-63 characters of a-z, 0-9, _ and -, starting with a letter or digit",
      { cluster: cluster.slice(0, 80) },
    );
  }
  const allowed = (env.CLUSTERS ?? "*").split(",").map((s) => s.trim());
  if (!allowed.includes("*") && !allowed.includes(cluster)) {
    throw new ApiError("NOT_FOUND", `no cluster named ${cluster}`, { cluster });
  }
  return cluster;
}

export function masterStub(env: Env, cluster: string): DurableObjectStub<MasterDO> {
  const ns = env.MASTER as unknown as DurableObjectNamespace<MasterDO>;
  return ns.get(ns.idFromName(masterObjectName(cluster)));
}

export function replicaStub(env: Env, cluster: string, id: string): DurableObjectStub<ReplicaDO> {
  const ns = env.REPLICA as unknown as DurableObjectNamespace<ReplicaDO>;
  return ns.get(ns.idFromName(replicaObjectName(cluster, id)));
}

export function replicaCount(env: Env): number {
  return Math.max(0, Number.parseInt(env.DEFAULT_REPLICAS, 10) || 0);
}

export function randomReplicaId(env: Env): string | null {
  const count = replicaCount(env);
  if (count === 0) return null;
  return replicaId(1 + Math.floor(Math.random() * count));
}
