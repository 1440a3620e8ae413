/**
 * Which clusters exist and how to reach their objects. The topology comes from
 * wrangler vars: CLUSTERS ("*" = any valid name is created on first use, or a
 * comma-separated list) and DEFAULT_REPLICAS.
 */
import { ApiError } from "../core/errors";
import type { DirectoryRecord } from "../core/directory-record";
import { isNotMaster } from "../core/members";
import { directoryStub } from "../durable-objects/directory";
import type { ClusterNode } from "../durable-objects/node";
import { nodeObjectName } from "../durable-objects/node-rpc";
import { defaultLocations, stubWithHint } from "../durable-objects/placement-env";
import { byNearness, callerRegion, type LocationHint } from "../core/placement";
import type { PlacedReplica } from "../core/status";

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

/** A member's stub, with its location hint when known (it counts if this call creates it). */
export function memberStub(
  env: Env,
  cluster: string,
  id: string,
  location?: LocationHint | null,
): DurableObjectStub<ClusterNode> {
  const ns = env.NODE as unknown as DurableObjectNamespace<ClusterNode>;
  return stubWithHint(ns, ns.idFromName(nodeObjectName(cluster, id)), location);
}

/** A member's hint as a directory record holds it, else the default topology's. */
function hintOf(env: Env, record: DirectoryRecord, id: string): LocationHint | undefined {
  return record.config?.locations?.[id] ?? defaultLocations(env)[id];
}

/** The master of a directory record, with its hint. */
function masterStub(env: Env, cluster: string, record: DirectoryRecord) {
  return memberStub(env, cluster, record.master, hintOf(env, record, record.master));
}

/** Any member's stub, with the hint the directory (cached) records for it. */
export async function placedMemberStub(
  env: Env,
  cluster: string,
  id: string,
): Promise<DurableObjectStub<ClusterNode>> {
  return memberStub(env, cluster, id, hintOf(env, await masterRecord(env, cluster), id));
}

/**
 * Which member is master, as the directory last said, cached in this isolate.
 * A stale entry costs one refused call: a node that is not master says so
 * (NOT_MASTER), and the front door asks the directory again.
 */
const MASTER_TTL_MS = 30_000;
const masters = new Map<string, { record: DirectoryRecord; until: number }>();

export async function masterRecord(
  env: Env,
  cluster: string,
  fresh = false,
): Promise<DirectoryRecord> {
  const cached = masters.get(cluster);
  if (!fresh && cached !== undefined && Date.now() < cached.until) return cached.record;
  const record = (await directoryStub(env, cluster).read()) as DirectoryRecord;
  const known = masters.get(cluster)?.record;
  // A higher term replaces what is cached; a lower one (a slow read) never does.
  if (known === undefined || record.term >= known.term) {
    masters.set(cluster, { record, until: Date.now() + MASTER_TTL_MS });
  }
  return masters.get(cluster)?.record ?? record;
}

export function forgetMaster(cluster: string): void {
  masters.delete(cluster);
  replicaLists.delete(cluster);
}

/**
 * Runs `act` on the master's stub. A node that answers NOT_MASTER refused
 * before doing anything: the directory is asked again, the master it names is
 * told to take over (it may not have yet), and `act` runs once more there.
 */
export async function onMaster<T>(
  env: Env,
  cluster: string,
  act: (master: DurableObjectStub<ClusterNode>) => Promise<T>,
): Promise<T> {
  const record = await masterRecord(env, cluster);
  try {
    return await act(masterStub(env, cluster, record));
  } catch (error) {
    if (!isNotMaster(error)) {
      // A master that does not answer may have been replaced: the next request asks again.
      forgetMaster(cluster);
      throw error;
    }
  }
  forgetMaster(cluster);
  const fresh = await masterRecord(env, cluster, true);
  const stub = masterStub(env, cluster, fresh);
  await stub.takeOver(cluster);
  return await act(stub);
}

/**
 * The replicas of each cluster with their hints and states, as the master
 * last said, cached in this isolate for a short while: reads are routed with
 * it. A stale entry is harmless: a replica that lost its lease or was removed
 * refuses a strong read and the master serves it.
 */
const REPLICA_LIST_TTL_MS = 2_000;
const replicaLists = new Map<string, { replicas: PlacedReplica[]; until: number }>();

export async function placedReplicas(env: Env, cluster: string): Promise<PlacedReplica[]> {
  const cached = replicaLists.get(cluster);
  if (cached !== undefined && Date.now() < cached.until) return cached.replicas;
  const replicas = (await onMaster(env, cluster, (master) =>
    master.placement(cluster),
  )) as PlacedReplica[];
  replicaLists.set(cluster, { replicas, until: Date.now() + REPLICA_LIST_TTL_MS });
  return replicas;
}

export function forgetReplicaList(cluster: string): void {
  replicaLists.delete(cluster);
}

/**
 * The replica a read should go to: the nearest to the caller (core/placement.ts)
 * among the coherent ones, or among all for `any` (a stale read may come from
 * an incoherent replica); any coherent one when nothing is known of places.
 */
export async function nearestReplica(
  env: Env,
  cluster: string,
  cf: unknown,
  consistency: string,
): Promise<PlacedReplica | null> {
  const replicas = await placedReplicas(env, cluster);
  const eligible =
    consistency === "any" ? replicas : replicas.filter((r) => r.state === "coherent");
  return byNearness(callerRegion(cf), eligible)[0] ?? null;
}
