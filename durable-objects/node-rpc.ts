/**
 * The calls nodes make on each other, as interfaces: the master role's relays
 * call a replica's side, a replica calls the master's side. Typed here rather
 * than through the node class, so the roles never import the class that hosts
 * them (no import cycle), and each side sees only what it may call.
 */
import type { PrepareAnswer } from "../core/failover";
import type { LocationHint } from "../core/placement";
import { stubWithHint } from "./placement-env";
import type {
  AckRequest,
  AppendRequest,
  AppendResponse,
  LeaseGrant,
  LeaseRequest,
  NodeChecksums,
  PullRequest,
  PullResponse,
  SnapshotMessage,
  SnapshotReply,
} from "../core/protocol";

/** What the master calls on a replica. */
export interface ReplicaSide {
  append(request: AppendRequest): Promise<AppendResponse>;
  installSnapshot(message: SnapshotMessage): Promise<SnapshotReply>;
  checksums(node: string, atLsn: number, waitMs: number): Promise<NodeChecksums>;
  setStopped(stopped: boolean): Promise<void>;
  crashNode(midBatch: boolean): Promise<void>;
  tamper(sql: string): Promise<void>;
  setFaultDelay(ms: number): Promise<void>;
  /** Null if it may become master of `term` after a log through `lastLsn`, else why not. */
  promotable(lastLsn: number, term: number): Promise<string | null>;
}

/** What a replica calls on the master. */
export interface MasterSide {
  ack(request: AckRequest): Promise<void>;
  pullLog(request: PullRequest): Promise<PullResponse>;
  /** A strong read on the replica found no lease: one now, if the master grants it. */
  leaseOnDemand(request: LeaseRequest): Promise<LeaseGrant>;
}

/** What a promotion calls on any member, whatever its role. */
export interface PromotionSide {
  /** Fences the member into `term` (it refuses every older one from now on) and says where its log ends. */
  prepareTerm(cluster: string, term: number): Promise<PrepareAnswer>;
  /** How long the member has not heard from its master (0 on the master): automatic promotion's check. */
  masterSilence(): Promise<number>;
  /** The member the directory names master takes over with what the directory holds. */
  takeOver(cluster: string): Promise<{ master: string; term: number }>;
}

export interface NodeRpc extends Rpc.DurableObjectBranded, ReplicaSide, MasterSide, PromotionSide {}

export type NodeStub = DurableObjectStub<NodeRpc>;

/** The Durable Object name of a cluster's member: one object per member, whatever its role. */
export function nodeObjectName(cluster: string, member: string): string {
  return `${cluster}:${member}`;
}

/**
 * A member's stub. Its location hint (core/placement.ts) counts only when this
 * call creates the object, so every caller that knows it passes it.
 */
export function nodeStub(
  env: Env,
  cluster: string,
  member: string,
  location?: LocationHint | null,
): NodeStub {
  const ns = env.NODE as unknown as DurableObjectNamespace<NodeRpc>;
  return stubWithHint(ns, ns.idFromName(nodeObjectName(cluster, member)), location);
}
