/**
 * What the master publishes in the directory for a promotion without it: the
 * sanctioned replicas, the tunables, the next replica id, the longest lease of
 * its term and the test-only message faults. Published before a membership
 * change takes effect, after a tunables change, and when the master starts.
 */
import { ApiError } from "../../core/errors";
import { locationsFromStored } from "../../core/placement";
import { metByEveryMajority } from "../../core/quorum";
import type { Tunables } from "../../core/tunables";
import { directoryStub } from "../directory";
import type { NodeStore } from "../node-store";

export interface ConfigSource {
  env: Env;
  cluster: string;
  term: number;
  self: string;
  store: NodeStore;
  tunables: Tunables;
  stepDown(term: number): void;
}

/**
 * The longest coherency_lease_ms in effect in this term: a lease granted at a
 * length since shortened may still run (kept in storage, `max_lease_ms`).
 */
export function maxLeaseMs(store: NodeStore, tunables: Tunables): number {
  const saved = Number(store.getMeta("max_lease_ms") ?? 0);
  const current = tunables.coherency_lease_ms;
  if (current > saved) store.setMeta("max_lease_ms", String(current));
  return Math.max(saved, current);
}

/** A directory that names a later term makes this master step down. */
export async function publishConfig(
  src: ConfigSource,
  replicas: string[],
  nextReplica = Number(src.store.getMeta("next_replica") ?? 1),
  locations = locationsFromStored(src.store.getMeta("locations")),
): Promise<void> {
  const config = {
    replicas,
    tunables: src.store.storedTunables(),
    nextReplica,
    maxLeaseMs: maxLeaseMs(src.store, src.tunables),
    messageFaults: src.store.getMeta("message_faults"),
    locations,
  };
  const outcome = await directoryStub(src.env, src.cluster).publish(src.term, src.self, config);
  if (outcome.ok) return;
  if (outcome.record.term > src.term) src.stepDown(outcome.record.term);
  throw new ApiError("UNAVAILABLE", `not published in the directory: ${outcome.reason}`, {
    retryAfterSeconds: 1,
  });
}

/**
 * With durable_lsns, a membership change that would leave an acknowledged
 * commit on too few of the members after it is refused (Raft changes
 * membership one node at a time for the same reason): a promotion without
 * this master counts the members the directory lists.
 */
export function membershipRefusal(
  tunables: Tunables,
  answeredHighLsn: number,
  ackedAfter: readonly number[],
): ApiError | null {
  if (!tunables.durable_lsns) return null;
  const holders = 1 + ackedAfter.filter((lsn) => lsn >= answeredHighLsn).length;
  if (metByEveryMajority(holders, ackedAfter.length + 1)) return null;
  return new ApiError(
    "UNAVAILABLE",
    `after this change, commits acknowledged through LSN ${answeredHighLsn} would be on ${holders} of ${ackedAfter.length + 1} members, too few for every majority of them to hold them; retry once the replicas caught up`,
    { retryAfterSeconds: 1 },
  );
}
