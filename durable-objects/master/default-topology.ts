/**
 * A new cluster's first membership: DEFAULT_REPLICAS replicas (replica-1 …)
 * with the location hints DEFAULT_LOCATIONS gives, written once, in one
 * transaction, by the first master of the cluster.
 */
import { FIRST_MASTER } from "../../core/members";
import { replicaId } from "../../core/protocol";
import type { NodeStore } from "../node-store";
import { defaultLocations } from "../placement-env";

/** Seeds the default topology unless the cluster already has a membership. */
export function seedDefaultTopology(
  env: Env,
  storage: DurableObjectStorage,
  store: NodeStore,
  lsn: number,
): void {
  if (store.loadReplicaStates().size > 0 || store.getMeta("next_replica") !== null) return;
  const count = Math.max(0, Number.parseInt(env.DEFAULT_REPLICAS, 10) || 0);
  // Only the members seeded now: a hint for a later id would silently place
  // a replica added without one.
  const members = new Set([
    FIRST_MASTER,
    ...Array.from({ length: count }, (_, i) => replicaId(i + 1)),
  ]);
  const locations = Object.fromEntries(
    Object.entries(defaultLocations(env)).filter(([id]) => members.has(id)),
  );
  storage.transactionSync(() => {
    store.setMeta("locations", JSON.stringify(locations));
    for (let i = 1; i <= count; i++) {
      // A new replica of a new cluster has applied nothing and nothing was committed.
      const state = lsn === 0 ? "coherent" : "incoherent";
      store.saveReplicaState(replicaId(i), state, state === "coherent" ? null : "new");
    }
    store.setMeta("next_replica", String(count + 1));
  });
}
