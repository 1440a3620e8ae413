/**
 * The admin plane of one cluster (docs/api.md, "Admin plane"): status,
 * tunables, verify, membership, promotion and /metrics, with the test-only
 * fault routes as `admin.faults`. Needs ADMIN_TOKEN.
 *
 * Reads and settings are retried under the client's policy; adding a replica,
 * removing one and promoting are sent once unless the call passes `retry`,
 * since each acts once per request (requester.ts).
 */
import { FaultClient } from "./faults.ts";
import type { AdminCall, CallOptions, Requester } from "./requester.ts";
import type {
  AddedReplica,
  ClusterStatus,
  DeletedCluster,
  LocationHint,
  Promoted,
  PromoteRequest,
  RemovedReplica,
  ReplicaList,
  TunableList,
  TunablePatch,
  VerifyReport,
} from "./types.ts";

export class AdminClient {
  readonly faults: FaultClient;
  private readonly call: AdminCall;
  private readonly requester: Requester;
  private readonly cluster: string;
  private readonly token: string | undefined;

  constructor(requester: Requester, cluster: string, token: string | undefined) {
    this.requester = requester;
    this.cluster = cluster;
    this.token = token;
    const base = `/admin/clusters/${encodeURIComponent(cluster)}`;
    this.call = (method, path, idempotent, options, body) =>
      requester.run(
        { method, path: `${base}${path}`, token, body, answer: "json", idempotent },
        options,
      );
    this.faults = new FaultClient(this.call);
  }

  /** The master's position, waiter and read barrier, and every replica's state and lag. */
  status(options: CallOptions = {}): Promise<ClusterStatus> {
    return this.call("GET", "/status", true, options);
  }

  tunables(options: CallOptions = {}): Promise<TunableList> {
    return this.call("GET", "/tunables", true, options);
  }

  /** All or nothing; answers with the full list. Setting a value twice is setting it once. */
  patchTunables(patch: TunablePatch, options: CallOptions = {}): Promise<TunableList> {
    return this.call("PATCH", "/tunables", true, options, patch);
  }

  /** Table checksums on every node: `agree` when the replicas match the master. */
  verify(options: CallOptions = {}): Promise<VerifyReport> {
    return this.call("POST", "/verify", true, options);
  }

  replicas(options: CallOptions = {}): Promise<ReplicaList> {
    return this.call("GET", "/replicas", true, options);
  }

  /** Adds a replica, optionally with a Durable Object location hint. */
  addReplica(
    placement: { location?: LocationHint } = {},
    options: CallOptions = {},
  ): Promise<AddedReplica> {
    return this.call("POST", "/replicas", false, options, placement);
  }

  /** Not retried by default: a retry after a lost answer would find it gone (404). */
  removeReplica(id: string, options: CallOptions = {}): Promise<RemovedReplica> {
    return this.call("DELETE", `/replicas/${encodeURIComponent(id)}`, false, options);
  }

  /** Hands over to a coherent replica (or promotes without the master); answers once it took over. */
  promote(request: PromoteRequest = {}, options: CallOptions = {}): Promise<Promoted> {
    return this.call("POST", "/promote", false, options, request);
  }

  /**
   * Deletes the cluster: every member's storage, then its name (its next use
   * creates a new, empty cluster). Irreversible; `confirm` must repeat the
   * cluster's name. Safe to retry: a deletion cut short is finished by another.
   */
  deleteCluster(confirm: string, options: CallOptions = {}): Promise<DeletedCluster> {
    return this.call("DELETE", `?confirm=${encodeURIComponent(confirm)}`, true, options);
  }

  /** GET /metrics?cluster=…: Prometheus text. */
  metrics(options: CallOptions = {}): Promise<string> {
    return this.requester.run<string>(
      {
        method: "GET",
        path: `/metrics?cluster=${encodeURIComponent(this.cluster)}`,
        token: this.token,
        answer: "text",
        idempotent: true,
      },
      options,
    );
  }
}
