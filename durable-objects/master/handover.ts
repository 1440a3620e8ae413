/**
 * Promotion by handover, the old master's side (POST …/promote): stop taking
 * writes, let every waiting commit be answered, wait until the candidate has
 * acked the last LSN, stop sending (no record or lease of this term goes out
 * after), then name the candidate master of the next term in the directory,
 * by compare-and-set on this term, with what it takes over. Whatever the
 * outcome, this master steps down once the directory may have moved: it never
 * commits again in a term the directory may already have ended.
 */
import { ApiError, type Result, fail, ok } from "../../core/errors";
import { type HandoverState, chooseCandidate, inheritedReplicas } from "../../core/handover";
import { directoryStub } from "../directory";
import type { MasterCore } from "./core";

/**
 * How long the candidate may take to ack the master's last LSN: as long as a
 * coherent replica may take to ack anything before it is marked incoherent.
 */
const MIN_CATCH_UP_MS = 500;
const POLL_MS = 5;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class MasterHandover {
  constructor(private readonly core: MasterCore) {}

  promote(
    cluster: string,
    named: string | undefined,
  ): Promise<Result<{ master: string; term: number }>> {
    // A membership or tunables change in flight finishes first, and the
    // handover's record then holds it; one asked for during it is refused.
    return this.core.configChange(() => this.promoteNow(cluster, named));
  }

  private async promoteNow(
    cluster: string,
    named: string | undefined,
  ): Promise<Result<{ master: string; term: number }>> {
    const core = this.core;
    core.ensureCluster(cluster);
    const refused = core.writeRefusal();
    if (refused !== null) return fail(refused);
    const choice = chooseCandidate(
      core.replicas.all().map((e) => ({ id: e.id, state: e.state, ackedLsn: e.relay.ackedLsn })),
      named,
    );
    if (!choice.ok) {
      const missing = named !== undefined && core.replicas.get(named) === undefined;
      return fail(
        new ApiError(missing ? "NOT_FOUND" : "UNAVAILABLE", choice.reason, {
          ...(missing ? {} : { retryAfterSeconds: 1 }),
        }),
      );
    }
    const candidate = choice.id;
    core.frozen = `${candidate} is being promoted`;
    await this.drain();
    const behind =
      (await this.catchUp(candidate)) ??
      (await core.replicaStub(candidate).promotable(core.lsn, core.term + 1));
    if (behind !== null) {
      core.frozen = null;
      return fail(new ApiError("UNAVAILABLE", `${candidate}: ${behind}`, { retryAfterSeconds: 1 }));
    }
    const handover = this.handoverState(candidate);
    // From here no record or lease of this term leaves: the candidate has all of them.
    for (const entry of core.replicas.all()) entry.relay.retire();
    let term: number;
    let won: boolean;
    try {
      const outcome = await directoryStub(core.env, cluster).promote(
        core.term,
        candidate,
        handover,
      );
      term = outcome.record.term;
      won = outcome.ok;
    } catch (error) {
      // The directory may or may not have moved. This master restarts in its
      // role, which asks the directory before it sends or serves anything: it
      // steps down if the new term began, and is master again if not.
      core.restart(`the directory did not answer the handover: ${String(error)}`);
      return fail(
        new ApiError("UNAVAILABLE", "the directory did not answer the handover; retry", {
          retryAfterSeconds: 1,
        }),
      );
    }
    core.stepDown(term);
    if (!won) {
      return fail(
        new ApiError("UNAVAILABLE", `another promotion won: term ${term}`, {
          retryAfterSeconds: 1,
        }),
      );
    }
    return ok({ master: candidate, term });
  }

  /** Until every waiting commit is answered (acked or timed out) and no writer is busy. */
  private async drain(): Promise<void> {
    const core = this.core;
    const until = Date.now() + core.tunables.commit_timeout_ms;
    while ((core.waiter.outstanding > 0 || core.writers.busy > 0) && Date.now() < until) {
      await sleep(POLL_MS);
    }
  }

  /** Null once the candidate acked the last LSN, else why not. */
  private async catchUp(candidate: string): Promise<string | null> {
    const core = this.core;
    const waitMs = Math.max(MIN_CATCH_UP_MS, core.tunables.rep_timeout_ms);
    const until = Date.now() + waitMs;
    for (;;) {
      const entry = core.replicas.get(candidate);
      if (entry === undefined) return `${candidate} was removed`;
      if (entry.state !== "coherent") {
        return `${candidate} turned ${entry.state} (${entry.reason}) during the handover`;
      }
      if (entry.relay.ackedLsn >= core.lsn) return null;
      if (Date.now() >= until) {
        return `${candidate} did not ack LSN ${core.lsn} within ${waitMs} ms (it is at ${entry.relay.ackedLsn})`;
      }
      entry.relay.heartbeatNow();
      await sleep(POLL_MS);
    }
  }

  private handoverState(candidate: string): HandoverState {
    const core = this.core;
    const tunables = core.store.storedTunables();
    const members = core.replicas
      .all()
      .map((e) => ({ id: e.id, state: e.state, reason: e.reason }));
    return {
      from: core.self,
      lastLsn: core.lsn,
      tunables,
      replicas: inheritedReplicas(members, candidate, core.self),
      nextReplica: Number(core.store.getMeta("next_replica") ?? 1),
      messageFaults: core.store.getMeta("message_faults"),
      locations: core.store.getMeta("locations"),
      leaseRemovals: core.store.getMeta("lease_removals"),
      leaseUntil: core.replicas.latestLeaseGranted(),
      maxLeaseMs: core.maxLeaseMs(),
    };
  }
}
