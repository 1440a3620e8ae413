/**
 * A change of sync_mode keeps every lease rule. Leaving full: leases stop
 * being granted, and the new mode applies only once every lease already
 * granted has run out (a replica still holding one could otherwise serve a
 * strong read without a write the new mode acknowledged). Entering full:
 * replicas that missed writes acknowledged meanwhile are demoted, and commits
 * still waiting under quorum rules switch to full's, since from now on every
 * coherent replica is granted leases again.
 */
import type { SyncMode } from "../../core/tunables";
import type { ReplicaSet } from "./replica-set";
import type { Waiter } from "./waiter";

export class SyncModeSwitch {
  /** Set while a switch away from full waits for granted leases to expire. */
  private leavingFull = false;

  constructor(
    private readonly replicas: ReplicaSet,
    private readonly waiter: Waiter,
    private readonly answeredHighLsn: () => number,
  ) {}

  /** Leases may be granted: full sync, and no switch away from it under way. */
  leasesAllowed(mode: SyncMode): boolean {
    return mode === "full" && !this.leavingFull;
  }

  /** Before the new mode is set: leaving full waits out every lease granted. */
  async before(from: SyncMode, to: SyncMode): Promise<void> {
    if (from !== "full" || to === "full") return;
    this.leavingFull = true;
    try {
      const wait = this.replicas.latestLeaseGranted() - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait + 1));
    } finally {
      this.leavingFull = false;
    }
  }

  /** Once the new mode is set: entering full demotes and moves waiting commits to full's rules. */
  after(from: SyncMode, to: SyncMode): void {
    if (from === "full" || to !== "full") return;
    this.replicas.demoteMissing(this.answeredHighLsn());
    this.waiter.adoptFullSync(this.replicas.waitSetIds(Date.now()));
  }
}
