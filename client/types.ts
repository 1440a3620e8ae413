/**
 * Request and response shapes of docs/api.md. The server's own types are
 * reused where they exist (type-only imports: nothing from core/ runs in the
 * client), so a change to what the server answers shows up here at compile
 * time instead of drifting.
 */
import type { LocationHint } from "../core/placement.ts";
import type { ExecResponse, QueryResponse, StatementResult } from "../core/protocol.ts";
import type { TunableDescription, TunableName, TunableValue } from "../core/tunables.ts";
import type { SqlParam } from "./values.ts";

export type { MessageFaultConfig } from "../core/message-faults.ts";
export type { LocationHint } from "../core/placement.ts";
export type { ClusterStatus, ReplicaState, ReplicaStatus } from "../core/status.ts";
export type { TunableDescription, TunableName, TunableValue } from "../core/tunables.ts";
export type { NodeReport, VerifyReport } from "../core/verify.ts";

export type Consistency = "strong" | "bookmark" | "any";
export type ResultFormat = "objects" | "arrays";

/** One statement of an exec: SQL and its parameters (encoded by client/values.ts). */
export interface StatementInput {
  sql: string;
  params?: readonly SqlParam[];
}

/** What exec and the rows route answer: the commit's LSN, each statement's result, its bookmark. */
export type ExecResult = ExecResponse;
export type { StatementResult };

/** A query's answer: rows as objects keyed by column, or `columns` beside arrays. */
export type QueryResult<F extends ResultFormat = "objects"> = F extends "arrays"
  ? Extract<QueryResponse, { columns: string[] }>
  : Exclude<QueryResponse, { columns: string[] }>;

/** GET and PATCH …/tunables: every tunable with its value, default, bounds and description. */
export type TunableList = Record<TunableName, TunableDescription>;

/** A PATCH of tunables: any subset, all applied or none. */
export type TunablePatch = Partial<Record<TunableName, TunableValue>>;

export interface ReplicaList {
  replicas: string[];
  locations: Record<string, LocationHint | null>;
}

export interface AddedReplica {
  id: string;
  location: LocationHint | null;
  replicas: string[];
}

/** DELETE /admin/clusters/{cluster}: every member emptied, the master first. */
export interface DeletedCluster {
  cluster: string;
  members: string[];
}

export interface RemovedReplica {
  id: string;
  replicas: string[];
}

export interface PromoteRequest {
  /** The member to promote; without it the master (or the failover) chooses. */
  replica?: string;
  /** Promote without asking the master. */
  force?: boolean;
}

export interface Promoted {
  master: string;
  term: number;
}
