/**
 * Which clusters exist and how to reach their objects. The topology comes from
 * wrangler vars: CLUSTERS ("*" = any valid name is created on first use, or a
 * comma-separated list) and DEFAULT_REPLICAS.
 */
import { ApiError } from "../core/errors";
import { FIRST_MASTER } from "../core/members";
import type { ClusterNode } from "../durable-objects/node";
import { nodeObjectName } from "../durable-objects/node-rpc";

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

export function memberStub(env: Env, cluster: string, id: string): DurableObjectStub<ClusterNode> {
  const ns = env.NODE as unknown as DurableObjectNamespace<ClusterNode>;
  return ns.get(ns.idFromName(nodeObjectName(cluster, id)));
}

export function masterStub(env: Env, cluster: string): DurableObjectStub<ClusterNode> {
  return memberStub(env, cluster, FIRST_MASTER);
}

/**
 * The replicas of each cluster, as the master last said, cached in this isolate
 * for a short while: reads are routed with it. A stale entry is harmless — a
 * removed replica's lease runs out and it redirects strong reads to the master.
 */
const REPLICA_LIST_TTL_MS = 2_000;
const replicaLists = new Map<string, { ids: string[]; until: number }>();

export async function replicaIds(env: Env, cluster: string): Promise<string[]> {
  const cached = replicaLists.get(cluster);
  if (cached !== undefined && Date.now() < cached.until) return cached.ids;
  const ids = (await masterStub(env, cluster).replicaIds(cluster)) as string[];
  replicaLists.set(cluster, { ids, until: Date.now() + REPLICA_LIST_TTL_MS });
  return ids;
}

export function forgetReplicaList(cluster: string): void {
  replicaLists.delete(cluster);
}

export async function randomReplicaId(env: Env, cluster: string): Promise<string | null> {
  const ids = await replicaIds(env, cluster);
  return ids[Math.floor(Math.random() * ids.length)] ?? null;
}
