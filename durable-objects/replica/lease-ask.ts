/**
 * The replica's side of a lease on demand (master/lease-on-demand.ts): one
 * request at a time, which every strong read that finds no lease meanwhile
 * shares, bounded in time; a failure or a refusal is null, and the read is
 * sent to the master as it was before leases could be asked for.
 */
import type { LeaseGrant } from "../../core/protocol";
import { isNotMaster } from "../../core/members";
import { directoryStub } from "../directory";
import { nodeStub } from "../node-rpc";

export class LeaseAsk {
  private pending: Promise<LeaseGrant | null> | null = null;

  constructor(
    private readonly env: Env,
    /** Fault hook: a partitioned node sends no call to another member. */
    private readonly partitioned: () => boolean,
  ) {}

  ask(cluster: string, master: string, self: string, term: number, boundMs: number) {
    if (this.partitioned()) return Promise.resolve(null);
    if (this.pending !== null) return this.pending;
    const request = { cluster, replicaId: self, term };
    const call = nodeStub(this.env, cluster, master)
      .leaseOnDemand(request)
      .catch(async (error: unknown) => {
        // Not the master any more (a promotion this replica has not heard of): ask the
        // one the directory names.
        if (!isNotMaster(error)) throw error;
        const named = (await directoryStub(this.env, cluster).read()).master;
        if (named === master) throw error;
        return nodeStub(this.env, cluster, named).leaseOnDemand(request);
      });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), boundMs);
    });
    this.pending = Promise.race([call, late])
      .catch(() => null)
      .finally(() => {
        clearTimeout(timer);
        this.pending = null;
      });
    return this.pending;
  }
}
