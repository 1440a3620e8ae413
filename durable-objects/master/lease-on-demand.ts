/**
 * A lease on demand: a replica whose strong read found no lease (the master
 * slept and the leases ran out, or one ran out between messages) asks the
 * master for one instead of sending the read away. The master grants it by
 * the rules of a lease sent with a message (ReplicaSet.grantLease): the
 * replica must be coherent and have acked through the lease floor, and with
 * durable_lsns a majority must have answered recently, which after a quiet
 * spell costs one heartbeat to every replica first. The grant is remembered
 * (lease horizon, wait sets) before the answer leaves, as for any lease.
 */
import { pollUntil } from "../../core/poll-until";
import type { LeaseGrant, LeaseRequest } from "../../core/protocol";
import { replicaReadWaitMs, replicaSettings } from "../../core/replica-settings";
import type { MasterCore } from "./core";

export async function grantOnDemand(core: MasterCore, request: LeaseRequest): Promise<LeaseGrant> {
  core.ensureCluster(request.cluster);
  const refused = (why: string): LeaseGrant => ({
    term: core.term,
    leaseUntil: 0,
    throughLsn: 0,
    commitPoint: core.strongReads.commitPoint,
    settings: replicaSettings(core.tunables),
    refused: why,
  });
  const before = refusal(core, request);
  if (before !== null) return refused(before);
  const now = Date.now();
  const until = now + replicaReadWaitMs(core.tunables);
  if (!core.replicas.quorumContact(now)) {
    const heard = await core.strongReads.majorityAnswered(now, until);
    if (!heard) return refused("the master has not heard from a majority of the cluster");
  }
  await learnPosition(core, request.replicaId, until);
  // The wait let anything happen: a step-down, a mark, a removal.
  const after = refusal(core, request);
  if (after !== null) return refused(after);
  const entry = core.replicas.get(request.replicaId);
  if (entry === undefined) return refused(`${request.replicaId} was removed`);
  const commitPoint = core.strongReads.current();
  const throughLsn = entry.relay.ackedLsn;
  const leaseUntil = core.replicas.grantLease(entry.id, throughLsn);
  if (leaseUntil === 0) {
    return refused(`${entry.id} has not acked through the lease floor, or leases are off`);
  }
  return {
    term: core.term,
    leaseUntil,
    throughLsn,
    commitPoint,
    settings: replicaSettings(core.tunables),
  };
}

/**
 * A master that just started (the platform evicted it while it slept) does
 * not know yet where the replica is, or knows an older position: it asks with
 * a heartbeat and waits for the answer (bounded), so the lease floor is judged
 * on where the replica really is.
 */
async function learnPosition(core: MasterCore, id: string, until: number): Promise<void> {
  const relay = core.replicas.get(id)?.relay;
  if (relay === undefined || (relay.position !== null && relay.ackedLsn >= core.lsn)) return;
  const asked = Date.now();
  relay.heartbeatNow();
  // Any answer that arrives from now on says where it is (one already on its way included).
  await pollUntil(() => (relay.lastHeardAt ?? 0) >= asked, until);
}

function refusal(core: MasterCore, request: LeaseRequest): string | null {
  if (request.term !== core.term) {
    return `the master is of term ${core.term}, the replica knows term ${request.term}`;
  }
  if (core.frozen !== null) return core.frozen;
  const entry = core.replicas.get(request.replicaId);
  if (entry === undefined) return `${request.replicaId} is not a replica of this cluster`;
  // One that caught up during its penalty rejoins now rather than at the next heartbeat.
  if (core.replicas.checkRejoin(entry)) core.waiter.requestPass();
  if (entry.state !== "coherent") return `${entry.id} is ${entry.state}`;
  // A replica the master cannot send to would hold every commit up for its lease.
  if (entry.relay.backingOff) return `the master cannot reach ${entry.id} now`;
  return null;
}
