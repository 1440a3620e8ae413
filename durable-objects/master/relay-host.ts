/**
 * What a relay may ask of the master (kept off the master's class so RPC does
 * not expose it), and the one conversion between the two shapes of an ack.
 */
import type {
  AckRequest,
  AppendRequest,
  AppendResponse,
  LogRecord,
  ReplicaSettings,
} from "../../core/protocol";
import type { NodeStub } from "../node-rpc";

export interface RelayHost {
  cluster: string;
  /** The master's member id. */
  self: string;
  now(): number;
  masterLsn(): number;
  term(): number;
  /** The LSN of this term's first record: a replica holding one at or past it from an older term diverged. */
  termStartLsn(): number;
  /** A replica knows a higher term: this master was replaced. */
  superseded(term: number): void;
  window(): number;
  callsInFlight(): number;
  /** relay_call_gap_ms: how long the newest batch call is out before another may go. */
  callGapMs(): number;
  batchMaxRecords(): number;
  batchMaxBytes(): number;
  heartbeatMs(): number;
  settings(): ReplicaSettings;
  readLog(fromLsn: number, maxRecords: number, maxBytes: number): LogRecord[];
  /** The term of the master's record `lsn` (0 when truncated past it or before the first). */
  termAt(lsn: number): number;
  /**
   * Lease to grant with a message sent now, which brings the replica through
   * `throughLsn` if it applies (0 when the replica may not serve strong reads).
   */
  grantLease(id: string, throughLsn: number): number;
  /** The commit point now (core/commit-point.ts), recomputed: sent with every message. */
  commitPoint(): number;
  /** The commit point last computed (cheap). */
  knownCommitPoint(): number;
  onAck(id: string, response: AppendResponse, rttMs: number, carriedRecords: boolean): void;
  onFailure(id: string, error: unknown): void;
  newStub(id: string): NodeStub;
  /** The one send point: `stub.append(request)`, through the test-only message faults. */
  append(id: string, stub: NodeStub, request: AppendRequest): Promise<AppendResponse>;
  /** Asks the master's scheduler to call `retryNow` at `at` (relay restarts are scheduled jobs). */
  scheduleRestart(id: string, at: number): void;
  /** Log records through this LSN are gone: a replica that needs them gets a snapshot. */
  truncatedThrough(): number;
  requestSnapshot(id: string): void;
  /** The replica computed other effects than the master: it is rebuilt. */
  diverged(id: string, at: { lsn: number; detail: string }): void;
}

/** A deferred ack (a call of its own) as the reply to an append would have carried it. */
export function asAck(ack: AckRequest): AppendResponse {
  return {
    appliedLsn: ack.appliedLsn,
    gap: false,
    echoSentAt: ack.echoSentAt,
    skipped: 0,
    applied: 0,
    ackDelayedMs: ack.ackDelayedMs,
  };
}
