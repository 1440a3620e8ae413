/**
 * DELETE /admin/clusters/{cluster}: every member's storage and alarm go, then
 * the directory's record, so the name is free and its next use creates a new
 * cluster (term 1, the default topology). The directory says "deleting" first,
 * so no master starts meanwhile (a master that starts reads the directory);
 * the master goes first, so nothing resends records to a replica already
 * deleted. Every step is idempotent: a deletion cut short is finished by
 * repeating the DELETE, and until then the cluster answers nothing. Two
 * DELETEs of one name overlap safely: each member checks, before it empties
 * itself, that the deletion it is asked for is still the directory's (a late
 * DELETE must not empty the name's next cluster), and only one forgets.
 */
import { ApiError } from "../core/errors";
import type { DirectoryRecord } from "../core/directory-record";
import { FIRST_MASTER } from "../core/members";
import { replicaId } from "../core/protocol";
import { directoryStub } from "../durable-objects/directory";
import { forgetMaster, forgetReplicaList, memberStub } from "./cluster";

const ATTEMPTS = 5;

export interface DeletedCluster {
  cluster: string;
  /** Every member whose object was emptied, the master first. */
  members: string[];
}

export async function deleteCluster(env: Env, cluster: string): Promise<DeletedCluster> {
  const directory = directoryStub(env, cluster);
  const record = await directory.markDeleting();
  forgetMaster(cluster);
  forgetReplicaList(cluster);
  const [master, ...others] = memberIds(env, record);
  await destroy(env, cluster, master as string, record.term);
  await Promise.all(others.map((id) => destroy(env, cluster, id, record.term)));
  await directory.forget(record.term);
  forgetMaster(cluster);
  forgetReplicaList(cluster);
  return { cluster, members: [master as string, ...others] };
}

/**
 * Every id the cluster may have used, the master first: the sanctioned
 * members, and every replica id ever given out (a removed replica's object
 * keeps its data until now). A cluster that never published its members had
 * only the default topology.
 */
export function memberIds(env: Env, record: DirectoryRecord): string[] {
  const defaults = Math.max(0, Number.parseInt(env.DEFAULT_REPLICAS, 10) || 0);
  const next = record.config?.nextReplica ?? defaults + 1;
  const ids = new Set([record.master, FIRST_MASTER, ...(record.config?.replicas ?? [])]);
  for (let i = 1; i < next; i++) ids.add(replicaId(i));
  return [...ids];
}

async function destroy(env: Env, cluster: string, id: string, markedTerm: number): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await memberStub(env, cluster, id).destroy(markedTerm);
      return;
    } catch (error) {
      if (attempt >= ATTEMPTS) {
        throw new ApiError(
          "UNAVAILABLE",
          `${cluster}/${id} was not deleted; the cluster answers nothing until DELETE is repeated`,
          { retryAfterSeconds: 1, member: id },
          error,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }
}
