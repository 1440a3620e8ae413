/**
 * Promotion without the master (it is lost or cut off): fence every member
 * into the next term, choose the most up-to-date log among a majority of the
 * answers, name it master in the directory by compare-and-set on the term,
 * and tell it to take over. The rules and the argument are in
 * core/failover.ts. Run by the promote route when the master does not answer,
 * and by a replica's watchdog (master_failover_ms).
 */
import type { ClusterConfig, DirectoryRecord } from "../core/directory-record";
import { ApiError, type Result, fail, ok } from "../core/errors";
import { type PrepareAnswer, chooseWithoutMaster } from "../core/failover";
import { majority } from "../core/quorum";
import { tunablesFromStored } from "../core/tunables";
import { directoryStub } from "./directory";
import { nodeStub } from "./node-rpc";

/** How long a member may take to answer the fence; one that does not is counted as lost. */
const PREPARE_MS = 2_000;

function within<T>(ms: number, promise: Promise<T>): Promise<T | null> {
  return Promise.race([
    promise.catch(() => null),
    new Promise<null>((resolve) => setTimeout(() => resolve(null), ms)),
  ]);
}

/**
 * An automatic promotion (a replica's watchdog) says the latest term it knows
 * and how long its master has been silent: it goes ahead only if the
 * directory names no later term (one whose master this replica was never
 * fenced into: it may simply not have heard from it yet), the master does not
 * answer, and a majority of the members has not heard from it for as long
 * (Raft's pre-vote: a replica cut off alone does not depose a master the
 * others hear). The directory's term may be older than the one known (a
 * promotion fenced the members and died before its compare-and-set) or the
 * same (its master was lost before this replica heard from it): either way
 * the cluster needs a master, and the fence and the compare-and-set keep it
 * to one per term.
 */
export interface AutoPromotion {
  knownTerm: number;
  silentForMs: number;
}

export async function promoteWithoutMaster(
  env: Env,
  cluster: string,
  named: string | undefined,
  auto?: AutoPromotion,
): Promise<Result<{ master: string; term: number }>> {
  const directory = directoryStub(env, cluster);
  const record = (await directory.read()) as DirectoryRecord;
  if (record.deleting === true) {
    return fail(new ApiError("UNAVAILABLE", "the cluster is being deleted; nothing to promote"));
  }
  if (auto !== undefined && record.term > auto.knownTerm) {
    return fail(
      new ApiError("UNAVAILABLE", `term ${record.term} already began: no promotion needed`, {
        retryAfterSeconds: 1,
      }),
    );
  }
  const config = record.config;
  if (config === undefined) {
    return fail(
      new ApiError("UNAVAILABLE", `the directory holds no members for term ${record.term} yet`, {
        retryAfterSeconds: 1,
      }),
    );
  }
  const rows = Object.entries(config.tunables).map(([name, value]) => ({ name, value }));
  if (!tunablesFromStored(rows).durable_lsns) {
    return fail(
      new ApiError(
        "UNAVAILABLE",
        "a promotion without the master needs durable_lsns: without it an acknowledged write may be on the master alone",
        { retryAfterSeconds: 1 },
      ),
    );
  }
  const members = [record.master, ...config.replicas];
  if (auto !== undefined) {
    const refusal = await preVote(env, cluster, record.master, members, auto.silentForMs, config);
    if (refusal !== null)
      return fail(new ApiError("UNAVAILABLE", refusal, { retryAfterSeconds: 1 }));
  }
  const term = record.term + 1;
  const fence = (id: string) =>
    within(
      PREPARE_MS,
      nodeStub(env, cluster, id, config.locations?.[id]).prepareTerm(
        cluster,
        term,
      ) as Promise<PrepareAnswer>,
    );
  const answers = (await Promise.all(members.map(fence))).filter(
    (a): a is PrepareAnswer => a !== null,
  );
  const choice = chooseWithoutMaster(members, answers, term, named);
  if (!choice.ok) {
    return fail(new ApiError("UNAVAILABLE", choice.reason, { retryAfterSeconds: 1 }));
  }
  const outcome = await directory.promote(record.term, choice.id, {
    from: record.master,
    lastLsn: choice.lastLsn,
    tunables: config.tunables,
    // Every other member, coherent: commits wait for each until it acks or its
    // deadline passes, which is never less safe than a smaller wait set.
    replicas: members
      .filter((id) => id !== choice.id)
      .map((id) => ({ id, state: "coherent" as const, reason: null })),
    nextReplica: config.nextReplica,
    messageFaults: config.messageFaults ?? null,
    locations: config.locations === undefined ? null : JSON.stringify(config.locations),
    leaseRemovals: null,
    leaseUntil: 0,
    maxLeaseMs: config.maxLeaseMs ?? 0,
  });
  if (!outcome.ok) {
    return fail(new ApiError("UNAVAILABLE", outcome.reason, { retryAfterSeconds: 1 }));
  }
  await nodeStub(env, cluster, choice.id, config.locations?.[choice.id]).takeOver(cluster);
  return ok({ master: choice.id, term: outcome.record.term });
}

/** Null if the master does not answer and a majority has not heard from it for `silentForMs`. */
async function preVote(
  env: Env,
  cluster: string,
  master: string,
  members: readonly string[],
  silentForMs: number,
  config: ClusterConfig,
): Promise<string | null> {
  const silences = await Promise.all(
    members.map((id) =>
      within(
        PREPARE_MS,
        nodeStub(env, cluster, id, config.locations?.[id]).masterSilence() as Promise<number>,
      ),
    ),
  );
  if (silences[members.indexOf(master)] !== null) return `the master ${master} answers`;
  const silent = silences.filter((ms) => ms !== null && ms >= silentForMs).length;
  if (silent < majority(members.length)) {
    return `only ${silent} of ${members.length} members have not heard from the master for ${silentForMs} ms`;
  }
  return null;
}
