/**
 * The master's half of the read barrier: it computes the commit point from its
 * replicas' acks and leases (core/commit-point.ts), hands it to the relays for
 * every message, and holds the master's own strong reads until the commit
 * point reaches the LSN they read at.
 */
import { CommitPoint, commitPointBound } from "../../core/commit-point";
import { ApiError } from "../../core/errors";
import { pollUntil } from "../../core/poll-until";
import { ReadBarrier } from "../../core/read-barrier";
import { masterReadWaitMs } from "../../core/replica-settings";
import type { ReplicaSet } from "./replica-set";

export interface StrongReadStatus {
  commitPoint: number;
  strongReads: { waitingNow: number; waited: number; timedOut: number };
}

export class MasterReadBarrier {
  private readonly point = new CommitPoint();
  private readonly barrier = new ReadBarrier();
  private refreshQueued = false;
  private pumpQueued = false;
  /** A lease expiry that may move the point while reads wait (a timer inside their live calls). */
  private wake: { at: number; timer: ReturnType<typeof setTimeout> } | null = null;

  constructor(private readonly replicas: ReplicaSet) {
    replicas.watch(() => this.refreshSoon());
  }

  /** The last commit point computed (cheap; `current` recomputes). */
  get commitPoint(): number {
    return this.point.value;
  }

  /** Recomputes the commit point from the replicas now and returns it. */
  current(): number {
    const now = Date.now();
    const bound = commitPointBound(this.replicas.leaseNodes(), {
      masterLsn: this.replicas.masterLsn(),
      now,
      leasesAllowed: this.replicas.leasesAllowed(),
    });
    // Never past what a majority has (durable_lsns): a read must not return a
    // write a promotion without this master could lose.
    const point = Math.min(bound.point, this.replicas.durablePoint());
    if (this.point.advance(point)) {
      this.barrier.advance(this.point.value);
      this.pumpRelaysSoon();
    }
    this.wakeAt(bound.changesAt, now);
    return this.point.value;
  }

  /** Acks, marks and removals in one turn of the event loop are taken in one recomputation. */
  refreshSoon(): void {
    if (this.refreshQueued) return;
    this.refreshQueued = true;
    queueMicrotask(() => {
      this.refreshQueued = false;
      this.current();
    });
  }

  /**
   * The point moved: relays with nothing in flight tell their replicas
   * (Relay.tellCommitPoint). After this turn, not now: `current` runs inside a
   * relay's send, and a send from there would overtake the one being made.
   */
  private pumpRelaysSoon(): void {
    if (this.pumpQueued) return;
    this.pumpQueued = true;
    queueMicrotask(() => {
      this.pumpQueued = false;
      for (const entry of this.replicas.all()) entry.relay.pump();
    });
  }

  /**
   * A strong read ran at `lsn`: returns once the commit point reached it, or
   * throws UNAVAILABLE when the bound runs out first (nothing was returned, so
   * nothing unacknowledged was seen).
   */
  async settle(lsn: number, readAt: number): Promise<void> {
    const boundMs = masterReadWaitMs(this.replicas.tunables());
    const until = Date.now() + boundMs;
    if (lsn > this.current()) {
      const reached = this.barrier.reach(lsn, boundMs);
      // Now that a read waits, a lease expiry that would move the point is watched too.
      this.current();
      if (!(await reached)) throw this.late(lsn, boundMs);
    }
    await this.confirmQuorum(readAt, until, boundMs);
  }

  /**
   * With durable_lsns the master answers a strong read itself only once a
   * majority answered, in its term, a message sent after the read ran (Raft's
   * read index): a majority that moved to a newer term before then would have
   * refused, so no newer master had acknowledged anything when the read ran.
   * Under traffic and heartbeats the messages are on their way already;
   * otherwise every relay is asked for one now.
   */
  private async confirmQuorum(readAt: number, until: number, boundMs: number): Promise<void> {
    if (await this.majorityAnswered(readAt, until)) return;
    throw new ApiError(
      "UNAVAILABLE",
      `the master has not heard from a majority of the cluster within ${boundMs} ms, so it may no longer be the master; retry`,
      { retryAfterSeconds: 1 },
    );
  }

  /**
   * Whether a majority answers, in this term, a message sent at or after
   * `since`, by `until`: if none has yet, every relay sends one now.
   */
  async majorityAnswered(since: number, until: number): Promise<boolean> {
    if (this.replicas.answeredSince(since)) return true;
    for (const entry of this.replicas.all()) entry.relay.heartbeatNow();
    return pollUntil(() => this.replicas.answeredSince(since), until);
  }

  private late(lsn: number, boundMs: number): ApiError {
    return new ApiError(
      "UNAVAILABLE",
      `the read ran at LSN ${lsn}, and the commit point (LSN ${this.point.value}) did not reach it within ${boundMs} ms; retry`,
      { retryAfterSeconds: 1, lsn, commitPoint: this.point.value },
    );
  }

  status(): StrongReadStatus {
    return {
      commitPoint: this.point.value,
      strongReads: {
        waitingNow: this.barrier.waitingNow,
        waited: this.barrier.waited,
        timedOut: this.barrier.timedOut,
      },
    };
  }

  private wakeAt(at: number | null, now: number): void {
    if (at === null || this.barrier.waitingNow === 0) return;
    if (this.wake !== null && this.wake.at <= at) return;
    if (this.wake !== null) clearTimeout(this.wake.timer);
    const timer = setTimeout(
      () => {
        this.wake = null;
        this.current();
      },
      Math.max(0, at - now) + 1,
    );
    this.wake = { at, timer };
  }
}
