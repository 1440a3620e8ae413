/**
 * A cluster member: one Durable Object class for every node, master or
 * replica. It owns the storage both roles work on (user tables, the log, the
 * saved results; node-host.ts) and forwards each RPC call to the role it holds; the roles are in
 * master/ and replica/, the rules they apply in core/. Its name says its
 * cluster and member id (`cluster:member`); a node that was never given a role
 * is a replica, except the first master of a cluster (node-0, term 1). A role
 * changes only with a term (promotion): the node persists the new role and
 * restarts into it, so no state of the old role survives in memory.
 */
import type { ProgramRequest } from "../core/hrana/program";
import type { PrepareAnswer } from "../core/failover";
import type { MessageFaultConfig } from "../core/message-faults";
import type { LocationHint } from "../core/placement";
import type { PlacedReplica } from "../core/status";
import type {
  AckRequest,
  AppendRequest,
  AppendResponse,
  ExecRequest,
  LeaseRequest,
  NodeChecksums,
  PullRequest,
  QueryRequest,
  SnapshotMessage,
} from "../core/protocol";
import { type ChangesPage, type ChangesRequest, readChanges } from "./change-feed";
import { answerForeignAppend } from "./master/foreign-append";
import { grantOnDemand } from "./master/lease-on-demand";
import type { MasterRole } from "./master/role";
import type { NodeRpc } from "./node-rpc";
import { NodeHost } from "./node-host";

export class ClusterNode extends NodeHost implements NodeRpc {
  // ------------------------------------------------------------ promotion

  async prepareTerm(cluster: string, term: number): Promise<PrepareAnswer> {
    return this.fence(cluster, term);
  }

  /** On the master: hand over to `named` (or the best coherent replica), POST …/promote. */
  async promote(cluster: string, named: string | undefined) {
    return this.busyMaster().handover.promote(cluster, named);
  }

  /**
   * On the member the directory names master: take over with what the
   * directory holds, if this node is not master of that term yet.
   */
  async takeOver(cluster: string): Promise<{ master: string; term: number }> {
    return this.takeOverNow(cluster);
  }

  /**
   * DELETE /admin/clusters/{cluster} (workers/cluster-delete.ts): this member
   * stops sending and answering, drops its alarm and every byte it stores, and
   * resets; a later call finds an empty object.
   */
  async destroy(markedTerm: number): Promise<void> {
    return this.destroyNow(markedTerm);
  }

  /** How long this member has not heard from its master (0 on the master itself). */
  async masterSilence(): Promise<number> {
    this.peer();
    const role = this.current();
    return role.kind === "master" ? 0 : role.watchdog.silenceMs(Date.now());
  }

  // ------------------------------------------------------------ master: data

  async exec(request: ExecRequest) {
    return this.busyMaster().writes.exec(request);
  }

  async query(request: QueryRequest) {
    // A strong read needs the cluster awake (leases, a majority's answer); others do not.
    const role = request.consistency === "strong" ? this.busyMaster() : this.master();
    return role.writes.query(request);
  }

  async program(request: ProgramRequest) {
    return this.busyMaster().writes.program(request);
  }

  async ack(request: AckRequest) {
    this.peer();
    return this.master().writes.ack(request);
  }

  async leaseOnDemand(request: LeaseRequest) {
    this.peer();
    return grantOnDemand(this.busyMaster().core, request);
  }

  async pullLog(request: PullRequest) {
    this.peer();
    return this.busyMaster().writes.pullLog(request);
  }

  // ------------------------------------------------------------ master: admin

  async status(cluster: string) {
    return this.master().admin.status(cluster);
  }

  async metricsText(cluster: string) {
    return this.master().admin.metricsText(cluster);
  }

  async getTunables(cluster: string) {
    return this.master().admin.getTunables(cluster);
  }

  async patchTunables(cluster: string, patch: unknown) {
    return this.busyMaster().admin.patchTunables(cluster, patch);
  }

  async verify(cluster: string) {
    return this.master().admin.verify(cluster);
  }

  async addReplica(cluster: string, location: LocationHint | null = null) {
    return this.busyMaster().admin.addReplica(cluster, location);
  }

  async removeReplica(cluster: string, id: string) {
    return this.busyMaster().admin.removeReplica(cluster, id);
  }

  async replicaIds(cluster: string): Promise<string[]> {
    return this.master().admin.replicaIds(cluster);
  }

  async placement(cluster: string): Promise<PlacedReplica[]> {
    return this.master().admin.placement(cluster);
  }

  // ------------------------------------------------------------ master: faults

  async crash(cluster: string) {
    return this.master().faults.crash(cluster);
  }

  async setReplicaStopped(cluster: string, id: string, stopped: boolean) {
    return this.master().faults.setReplicaStopped(cluster, id, stopped);
  }

  async setReplicaDisconnected(cluster: string, id: string, disconnected: boolean) {
    return this.master().faults.setReplicaDisconnected(cluster, id, disconnected);
  }

  async crashReplica(cluster: string, id: string, midBatch: boolean) {
    return this.master().faults.crashReplica(cluster, id, midBatch);
  }

  async setMessageFaults(cluster: string, config: MessageFaultConfig) {
    return this.master().faults.setMessageFaults(cluster, config);
  }

  async setReplicaDelay(cluster: string, id: string, ms: number) {
    return this.master().faults.setReplicaDelay(cluster, id, ms);
  }

  async tamperReplica(cluster: string, id: string, sql: string) {
    return this.master().faults.tamperReplica(cluster, id, sql);
  }

  async rewindRelay(cluster: string, id: string, lsn: number) {
    return this.master().faults.rewindRelay(cluster, id, lsn);
  }

  /** The change stream's next page from this node's log (change-feed.ts). */
  async changes(request: ChangesRequest): Promise<ChangesPage> {
    const role = this.current();
    let acknowledged: number | string;
    if (role.kind === "master") {
      role.core.ensureCluster(request.cluster);
      acknowledged = role.core.strongReads.current();
    } else acknowledged = role.acknowledgedThrough();
    if (typeof acknowledged === "string") return { kind: "unavailable", reason: acknowledged };
    return readChanges(this.node, this.store, request, acknowledged);
  }

  // ------------------------------------------------------------ replica

  append(request: AppendRequest): Promise<AppendResponse> {
    this.peer();
    const role = this.current();
    if (role.kind === "replica") return role.append(request);
    return answerForeignAppend(role.core, this.member, request);
  }

  installSnapshot(message: SnapshotMessage) {
    this.peer();
    return this.replica().installSnapshot(message);
  }

  replicaQuery(request: QueryRequest, servedBy: string) {
    return this.replica().replicaQuery(request, servedBy);
  }

  checksums(node: string, atLsn: number, waitMs: number): Promise<NodeChecksums> {
    return this.replica().checksums(node, atLsn, waitMs);
  }

  setStopped(stopped: boolean) {
    return this.replica().fault.setStopped(stopped);
  }

  crashNode(midBatch: boolean) {
    return this.replica().fault.crash(midBatch);
  }

  tamper(sql: string) {
    return this.replica().fault.tamper(sql);
  }

  setFaultDelay(ms: number) {
    return this.replica().fault.setDelay(ms);
  }

  async promotable(lastLsn: number, term: number): Promise<string | null> {
    return this.replica().promotable(lastLsn, term);
  }

  /**
   * Fault hook: lose this node (a region gone) or bring it back. Lost, it
   * resets and answers nothing until restored (the front door checks the
   * cluster's debug_fault_injection first).
   */
  async setLost(lost: boolean): Promise<void> {
    this.store.setMeta("lost", lost ? "1" : "0");
    await this.ctx.storage.sync();
    this.ctx.abort(lost ? "lost through the fault route" : "restored through the fault route");
  }

  /** Fault hook: cut this node off from the other members, or heal it; clients still reach it. */
  async setPartitioned(partitioned: boolean): Promise<void> {
    this.partitioned = partitioned;
    this.store.setMeta("partitioned", partitioned ? "1" : "0");
    if (!partitioned && this.role?.kind === "master") {
      for (const entry of this.role.core.replicas.all()) entry.relay.retryNow(true);
    }
  }

  appliedPosition() {
    return this.replica().appliedPosition();
  }

  // ------------------------------------------------------------ backup

  async exportBegin(cluster: string) {
    return this.busyMaster().exports.beginAcknowledged(cluster);
  }

  async exportPage(cluster: string, id: string, table: number, after: number) {
    return this.busyMaster().exports.page(cluster, id, table, after);
  }

  async exportEnd(cluster: string, id: string) {
    return this.master().exports.end(cluster, id);
  }

  async importBatch(request: Parameters<MasterRole["writes"]["importBatch"]>[0]) {
    return this.busyMaster().writes.importBatch(request);
  }
}
