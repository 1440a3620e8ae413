/**
 * What GET /admin/clusters/{cluster}/status answers: the master's position,
 * waiter and read barrier, and each replica's state, lag and counters.
 */
import type { MessageFaultConfig, MessageFaultKind } from "./message-faults";
import type { LocationHint } from "./placement";

export type ReplicaState = "coherent" | "incoherent" | "catching-up";

/** A replica as the front door routes reads: where it lives, whether it is coherent. */
export interface PlacedReplica {
  id: string;
  location: LocationHint | null;
  state: ReplicaState;
}

export interface ReplicaStatus {
  id: string;
  state: ReplicaState;
  /** Its location hint (core/placement.ts), null if it was created without one. */
  location?: LocationHint | null;
  ackedLsn: number;
  sentLsn: number;
  lagMs: number;
  bytesBehind: number;
  avgAckMs: number;
  /** Batches with records acked since the master started, and the sum of their round trips. */
  ackRttCount: number;
  ackRttTotalMs: number;
  /** Of that, the time replicas held the acks on purpose (debug_ack_delay_ms, measured there). */
  ackDelayTotalMs: number;
  lastAckAt: number | null;
  leaseUntil: number;
  incoherentReason: string | null;
  lastError: string | null;
  /** Catching up by pulling the log (logput_window) rather than taking live records. */
  pulling: boolean;
  /** Catch-up batches this replica pulled since the master started. */
  pullBatches: number;
  /** Being rebuilt from a snapshot now; snapshots installed since the master started. */
  rebuilding: boolean;
  snapshots: number;
  /** Milliseconds since the relay last sent it anything (data or heartbeat). */
  idleMs: number;
  /** Records it reported skipping because it had them (since the master started). */
  skipped: number;
  /** Heartbeats the relay sent it (since the master started). */
  heartbeats: number;
  /** Empty messages sent only to bring it a new commit point while nothing else was on its way. */
  commitPointNotices: number;
  /** Append calls made to this replica (batches, heartbeats, ack fetches). */
  calls: number;
  /** Deferred acks it sent as calls of their own (debug_ack_delay_ms, nothing to ride on). */
  ackCalls: number;
  /** Of `calls`: those that carried records, and the empty ones that fetched a held ack. */
  batches: number;
  ackFetches: number;
  /** Snapshot streams to it: the current or last one, and failures since the master started. */
  snapshot?: {
    id: string | null;
    lsn: number | null;
    rowsSent: number;
    failures: number;
    lastError: string | null;
  };
}

export interface ClusterStatus {
  cluster: string;
  master: {
    /** The member that is master now. */
    id: string;
    /** Its location hint, null if it was created without one. */
    location?: LocationHint | null;
    lsn: number;
    /** The cluster's term: one master per term; it changes only through the directory. */
    term: number;
    /** Incarnations of the master's object: a restart in place adds one, not a new term. */
    epoch: number;
    writersBusy: number;
    writersQueued: number;
    waiter: {
      /** Commits waiting for acks now (handed off and inline). */
      outstanding: number;
      /** Handed-off commits waiting now (what async_dist_commit_max_outstanding caps). */
      handedOffNow: number;
      peakOutstanding: number;
      handedOff: number;
      inlineWaits: { off: number; queueFull: number; notPlain: number };
      /** Commits answered right after the local commit (sync_mode none). */
      noWait: number;
      passes: number;
      /** Commits the passes examined, and how many of those they answered. */
      checked: number;
      answered: number;
      comparisons: number;
      skippedEarlyStop: number;
    };
    commits: number;
    replayed: number;
    logRows: number;
    logBytes: number;
    /** The master's SQLite file in bytes: user tables, the log and every internal table. */
    databaseBytes: number;
    /** Log records through this LSN are truncated. */
    truncatedThrough: number;
    /** Every LSN at or below it is on every node that may serve a strong read. */
    commitPoint: number;
    /** Strong reads on the master waiting for the commit point now; that waited, or ran out of time, since start. */
    strongReads: { waitingNow: number; waited: number; timedOut: number };
    /**
     * Scale to zero (idle_after_ms): whether the master sleeps (no heartbeat, no
     * timed job, no alarm), how long it has been quiet, why it stays awake,
     * and its sleeps and wakes since it started.
     */
    idle: {
      asleep: boolean;
      quietMs: number;
      awakeBecause: string | null;
      sleeps: number;
      wakes: number;
    };
  };
  replicas: ReplicaStatus[];
  /** Test-only faults (debug_fault_injection): the message faults set, and faults injected since the master started. */
  faults: {
    messages: MessageFaultConfig;
    injected: Record<MessageFaultKind | "replicaCrash", number>;
  };
}
