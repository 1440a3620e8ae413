/**
 * The master's view of its replicas: each one's state, lease, ack timing and
 * relay, and the coherency rules that move it between states (rejoin with a
 * penalty, incoherent marks by cause, the slow-replica rule, pull mode). It
 * grants leases (only past the lease floor) and keeps what a restarted master
 * must know of them (LeaseMemory).
 */
import type { NodeView } from "../../core/ack-book";
import type { LeaseNode } from "../../core/commit-point";
import { CONTACT_WINDOW_LEASES, durablePoint, hasQuorumContact } from "../../core/quorum";
import { findSlowReplica } from "../../core/slow-replica";
import type { ReplicaState } from "../../core/status";
import type { Tunables } from "../../core/tunables";
import { LeaseMemory, type MetaStore } from "./lease-memory";
import type { Relay } from "./relay";

export interface ReplicaEntry {
  id: string;
  state: ReplicaState;
  reason: string | null;
  /** Latest instant (master clock) until which a lease we granted may be held. */
  leaseGrantedUntil: number;
  /** When it was last marked incoherent (the rejoin penalty counts from here). */
  demotedAt: number;
  avgAckMs: number;
  /** Acks of batches with records since the replica last became coherent. */
  ackSamples: number;
  /** Batches with records acked since the master started: count, round trips, held delay. */
  ackRttCount: number;
  ackRttTotalMs: number;
  ackDelayTotalMs: number;
  relay: Relay;
}

export interface ReplicaSetHost {
  tunables(): Tunables;
  masterLsn(): number;
  /** Byte position of the end of the log, and of the end of record `lsn`. */
  logEnd(): number;
  endOffsetAt(lsn: number): number;
  /** The LSN a replica's ack must reach to rejoin (see MasterDO.coherencyThreshold). */
  rejoinThreshold(): number;
  /** Whether leases may be granted now (full sync, no mode change under way). */
  leasesAllowed(): boolean;
  /**
   * The LSN a replica must have applied to be granted a lease: the commit point,
   * and after a master restart the whole log (see core/commit-point.ts).
   */
  leaseFloor(): number;
  /** Where the lease bookkeeping that must survive a restart is kept (LeaseMemory). */
  leaseStore: MetaStore;
  joinWaits(id: string, ackedLsn: number): void;
  saveState(id: string, state: ReplicaState, reason: string | null): void;
  marked(id: string, reason: string): void;
  requestPass(): void;
}

/** A removed replica, kept while the last lease it was granted may still run. */
interface Departed {
  id: string;
  leaseGrantedUntil: number;
  ackedLsn(): number;
}

/** Weight of the newest batch round trip in a replica's average ack time. */
const ACK_EWMA_WEIGHT = 0.1;

export class ReplicaSet {
  readonly entries = new Map<string, ReplicaEntry>();
  /**
   * Removed replicas, kept until the last lease they were granted has expired:
   * commits that began waiting on them still need to know when they may drop them.
   */
  private readonly departed = new Map<string, Departed>();

  private readonly memory: LeaseMemory;
  /**
   * Since when the master has been calling its replicas: its start, or its
   * last wake. Silence before it is the master's own (it slept, or did not
   * exist), not a replica's, so unreachability counts from here at the earliest.
   */
  private callingSince = Date.now();
  /** Told whenever acks arrive or a replica changes state (the read barrier watches). */
  private readonly watchers: (() => void)[] = [];

  constructor(private readonly host: ReplicaSetHost) {
    this.memory = new LeaseMemory(host.leaseStore);
  }

  watch(watcher: () => void): void {
    this.watchers.push(watcher);
  }

  /** A pass of the waiter may now answer commits, and the commit point may move. */
  private changed(): void {
    this.host.requestPass();
    this.tellWatchers();
  }

  private tellWatchers(): void {
    for (const watcher of this.watchers) watcher();
  }

  masterLsn(): number {
    return this.host.masterLsn();
  }

  tunables(): Tunables {
    return this.host.tunables();
  }

  /** `leaseUntil`: until when a lease it was granted may be held (0: never granted one). */
  add(
    id: string,
    state: ReplicaState,
    reason: string | null,
    relay: Relay,
    leaseUntil: number,
  ): void {
    this.entries.set(id, {
      id,
      state,
      reason,
      leaseGrantedUntil: leaseUntil,
      demotedAt: 0,
      avgAckMs: 0,
      ackSamples: 0,
      ackRttCount: 0,
      ackRttTotalMs: 0,
      ackDelayTotalMs: 0,
      relay,
    });
  }

  get(id: string): ReplicaEntry | undefined {
    return this.entries.get(id);
  }

  remove(id: string): void {
    const entry = this.entries.get(id);
    if (entry === undefined) return;
    this.entries.delete(id);
    this.departed.set(id, {
      id,
      leaseGrantedUntil: entry.leaseGrantedUntil,
      ackedLsn: () => entry.relay.ackedLsn,
    });
    this.memory.removed(id, entry.leaseGrantedUntil, Date.now());
    this.tellWatchers();
  }

  /** At start-up: until when a lease an earlier incarnation granted may be held. */
  inheritedLeaseUntil(now: number): number {
    return this.memory.heldUntil(now, this.host.tunables().coherency_lease_ms);
  }

  /**
   * At start-up: replicas removed while their lease may still run keep holding
   * up commits until it has (an ack from one no longer counts: it is unknown).
   */
  restoreRemoved(now: number): void {
    for (const { id, leaseUntil } of this.memory.removals(now)) {
      if (this.entries.has(id)) continue;
      this.departed.set(id, { id, leaseGrantedUntil: leaseUntil, ackedLsn: () => 0 });
    }
  }

  /** Forgets removed replicas whose leases have run out. */
  purgeDeparted(now: number): void {
    for (const [id, entry] of this.departed) {
      if (now >= entry.leaseGrantedUntil) this.departed.delete(id);
    }
  }

  all(): ReplicaEntry[] {
    return [...this.entries.values()];
  }

  ids(): string[] {
    return [...this.entries.keys()];
  }

  /**
   * A new commit's wait set: the coherent replicas, and every other replica
   * whose last lease has not expired yet (marked incoherent or removed a moment
   * ago). Such a replica may still serve a strong read, so a commit must not be
   * answered without it until it acks or its lease runs out (the ack book drops
   * it then), however recently the commit began.
   */
  waitSetIds(now: number): Set<string> {
    const out = new Set<string>();
    for (const entry of this.entries.values()) {
      if (entry.state === "coherent" || now < entry.leaseGrantedUntil) out.add(entry.id);
    }
    for (const gone of this.departed.values()) {
      if (now < gone.leaseGrantedUntil) out.add(gone.id);
    }
    return out;
  }

  readonly view: NodeView = {
    ackedLsn: (id) =>
      this.entries.get(id)?.relay.ackedLsn ?? this.departed.get(id)?.ackedLsn() ?? 0,
    isCoherent: (id) => this.entries.get(id)?.state === "coherent",
    leaseUntil: (id) => (this.entries.get(id) ?? this.departed.get(id))?.leaseGrantedUntil ?? 0,
  };

  /**
   * The lease for a message that brings replica `id` through `throughLsn` (it
   * takes the lease only after applying the message, and only if the message
   * did not start past its position). Only a replica that will then have every
   * LSN up to the lease floor gets one: a strong read it serves can never miss
   * what the commit point already let another read return.
   */
  grantLease(id: string, throughLsn: number): number {
    const entry = this.entries.get(id);
    if (entry === undefined || entry.state !== "coherent" || !this.leasesAllowed()) return 0;
    if (Math.max(entry.relay.ackedLsn, throughLsn) < this.host.leaseFloor()) return 0;
    const now = Date.now();
    if (!this.quorumContact(now)) return 0;
    const leaseMs = this.host.tunables().coherency_lease_ms;
    const until = now + leaseMs;
    // Remembered before the message leaves (its output gate waits for the write).
    this.memory.cover(until, leaseMs, now);
    if (until > entry.leaseGrantedUntil) entry.leaseGrantedUntil = until;
    return until;
  }

  leasesAllowed(): boolean {
    return this.host.leasesAllowed();
  }

  /** With durable_lsns: whether a majority answered within the contact window (core/quorum.ts). */
  quorumContact(now: number): boolean {
    const t = this.host.tunables();
    return this.answeredSince(now - CONTACT_WINDOW_LEASES * t.coherency_lease_ms);
  }

  /** With durable_lsns: whether a majority answered, in this term, a message sent at or after `since`. */
  answeredSince(since: number): boolean {
    if (!this.host.tunables().durable_lsns) return true;
    return hasQuorumContact(
      this.all().map((e) => e.relay.answeredSentAt),
      since,
    );
  }

  /** With durable_lsns, the highest LSN a majority has; else the master's LSN. */
  durablePoint(): number {
    const lsn = this.host.masterLsn();
    if (!this.host.tunables().durable_lsns) return lsn;
    return durablePoint(
      lsn,
      this.all().map((e) => e.relay.ackedLsn),
    );
  }

  /** Every replica the commit point must consider, removed ones whose lease may still run included. */
  leaseNodes(): LeaseNode[] {
    const live = [...this.entries.values()].map((entry) => ({
      ackedLsn: entry.relay.ackedLsn,
      coherent: entry.state === "coherent",
      leaseUntil: entry.leaseGrantedUntil,
    }));
    const gone = [...this.departed.values()].map((entry) => ({
      ackedLsn: entry.ackedLsn(),
      coherent: false,
      leaseUntil: entry.leaseGrantedUntil,
    }));
    return [...live, ...gone];
  }

  /** The latest instant any lease granted may run to, removed replicas' included. */
  latestLeaseGranted(): number {
    let until = 0;
    for (const entry of [...this.entries.values(), ...this.departed.values()]) {
      until = Math.max(until, entry.leaseGrantedUntil);
    }
    return until;
  }

  /** An ack arrived: timing, then the rejoin rule for a replica out of the wait sets. */
  onAck(id: string, rttMs: number, carriedRecords: boolean, ackDelayedMs: number): void {
    const entry = this.entries.get(id);
    if (entry === undefined) {
      // A removed replica's call still in flight: commits wait on it while its
      // lease may run, and its ack can answer them.
      this.host.requestPass();
      return;
    }
    if (carriedRecords) {
      entry.avgAckMs =
        entry.ackSamples === 0
          ? rttMs
          : entry.avgAckMs * (1 - ACK_EWMA_WEIGHT) + rttMs * ACK_EWMA_WEIGHT;
      entry.ackSamples++;
      entry.ackRttCount++;
      entry.ackRttTotalMs += rttMs;
      entry.ackDelayTotalMs += ackDelayedMs;
    }
    if (entry.state !== "coherent") {
      entry.state = "catching-up";
      if (!this.checkRejoin(entry)) this.choosePullMode(entry);
    }
    this.changed();
  }

  /**
   * The rejoin rule: a replica whose acks are arriving rejoins once it has
   * reached the rejoin threshold and its penalty is over. Checked on every ack,
   * and by the heartbeat job: a replica that caught up during its penalty may
   * send no further ack (deferred acks go out once per LSN) until the next write.
   */
  checkRejoin(entry: ReplicaEntry): boolean {
    if (entry.state !== "catching-up") return false;
    const penaltyOver =
      Date.now() - entry.demotedAt >= this.host.tunables().coherency_rejoin_penalty_ms;
    if (!penaltyOver || entry.relay.ackedLsn < this.host.rejoinThreshold()) return false;
    this.markCoherent(entry);
    return true;
  }

  onFailure(id: string, now: number): void {
    const entry = this.entries.get(id);
    if (entry === undefined) return;
    if (entry.state === "catching-up") entry.state = "incoherent";
    this.checkUnreachable(entry, now);
  }

  markCoherent(entry: ReplicaEntry): void {
    entry.state = "coherent";
    entry.reason = null;
    entry.ackSamples = 0;
    this.host.saveState(entry.id, "coherent", null);
    this.host.joinWaits(entry.id, entry.relay.ackedLsn);
    entry.relay.resumeLive(entry.relay.ackedLsn);
    // Grant its lease now rather than with the next heartbeat.
    entry.relay.heartbeatNow();
  }

  markIncoherent(entry: ReplicaEntry, reason: string): void {
    if (entry.state !== "coherent") return;
    entry.state = "incoherent";
    entry.reason = reason;
    entry.demotedAt = Date.now();
    this.host.marked(entry.id, reason);
    this.host.saveState(entry.id, "incoherent", reason);
    this.choosePullMode(entry);
    // Out of the wait sets once its lease runs out: a waiting commit may be
    // answerable at once, and every mark must say so (rebuild, divergence and
    // removal bring no ack that would).
    this.changed();
  }

  /** The master woke (scale to zero): it calls its replicas again from `now`. */
  woke(now: number): void {
    this.callingSince = now;
  }

  /** A coherent replica that has answered nothing for rep_timeout_ms is marked incoherent. */
  checkUnreachable(entry: ReplicaEntry, now: number): void {
    if (entry.state !== "coherent" || entry.relay.failures === 0) return;
    const lastHeard = Math.max(entry.relay.lastHeardAt ?? 0, this.callingSince);
    if (now - lastHeard >= this.host.tunables().rep_timeout_ms) {
      this.markIncoherent(entry, "unreachable");
    }
  }

  /**
   * Under full sync, a coherent replica that has left a record unacked for
   * rep_timeout_ms is marked incoherent even when no commit waits on it any
   * more (its commit was answered COMMIT_TIMEOUT first): until it is marked and
   * its lease runs out, the commit point cannot pass that record, and every
   * strong read of it anywhere waits.
   */
  checkLagging(entry: ReplicaEntry, now: number): void {
    if (entry.state !== "coherent" || !this.host.leasesAllowed()) return;
    if (entry.relay.lag.lagMs(now) >= this.host.tunables().rep_timeout_ms) {
      this.markIncoherent(entry, "ack-timeout");
    }
  }

  /** Comdb2's slow-replica rule over the coherent replicas' average ack times. */
  checkSlow(): void {
    const entries = this.all();
    const coherent = entries
      .filter((e) => e.state === "coherent")
      .map((e) => ({ id: e.id, avgAckMs: e.avgAckMs, samples: e.ackSamples }));
    const slowNow = entries.filter((e) => e.state !== "coherent" && e.reason === "slow").length;
    const factor = this.host.tunables().slow_replica_factor;
    const slow = findSlowReplica(coherent, factor, slowNow, entries.length);
    const entry = slow === null ? undefined : this.entries.get(slow);
    if (entry !== undefined) {
      this.markIncoherent(entry, "slow");
    }
  }

  /** Back to full sync: replicas missing writes acknowledged meanwhile must rejoin. */
  demoteMissing(answeredHighLsn: number): void {
    for (const entry of this.entries.values()) {
      if (entry.relay.ackedLsn < answeredHighLsn) this.markIncoherent(entry, "mode-change");
    }
  }

  /** Grows with every read while a record is unacked, across stream restarts; 0 when none is. */
  lagMs(entry: ReplicaEntry, now: number): number {
    return entry.relay.lag.behindMs(now);
  }

  /** Bytes of log after `acked` (by default the replica's position as the protocol counts it). */
  bytesBehind(entry: ReplicaEntry, acked = entry.relay.ackedLsn): number {
    if (acked >= this.host.masterLsn()) return 0;
    return this.host.logEnd() - this.host.endOffsetAt(acked);
  }

  /**
   * logput_window: a replica out of the wait sets and more than the window
   * behind gets no live records (they would arrive far ahead of where it is)
   * and pulls the log in order instead.
   */
  choosePullMode(entry: ReplicaEntry): void {
    const window = this.host.tunables().logput_window_bytes;
    if (entry.state === "coherent" || window === 0 || entry.relay.pulling) return;
    if (this.bytesBehind(entry) > window) entry.relay.startPulling();
  }
}
