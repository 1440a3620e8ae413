/**
 * A cluster member: one Durable Object class for every node, master or
 * replica. It owns the storage both roles work on (user tables, the log, the
 * saved results) and forwards each call to the role it holds; the roles are in
 * master/ and replica/, the rules they apply in core/. Its name says its
 * cluster and member id (`cluster:member`); a node that was never given a role
 * is a replica, except the first master of a cluster (node-0, term 1). A role
 * changes only with a term (promotion): the node persists the new role and
 * restarts into it, so no state of the old role survives in memory.
 */
import type { ProgramRequest } from "../core/hrana/program";
import { DurableObject } from "cloudflare:workers";
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
import { FIRST_MASTER, NOT_MASTER, parseNodeName } from "../core/members";
import { migrate } from "../migrations";
import { type ChangesPage, type ChangesRequest, readChanges } from "./change-feed";
import { directoryStub } from "./directory";
import { promoteWithoutMaster } from "./failover";
import { answerForeignAppend } from "./master/foreign-append";
import { grantOnDemand } from "./master/lease-on-demand";
import { MasterRole } from "./master/role";
import type { NodeRpc } from "./node-rpc";
import { NodeStore } from "./node-store";
import { ReplicaRole } from "./replica/role";
import { syncCaptureTriggers } from "./sqlite/capture";
import { Schema, type SqlNode } from "./sqlite/schema";
import { installHandover } from "./takeover";

type RoleName = "master" | "replica";

const DELETING = "the cluster is being deleted";

export class ClusterNode extends DurableObject<Env> implements NodeRpc {
  private readonly node: SqlNode;
  private readonly store: NodeStore;
  private readonly member: string;
  private role: MasterRole | ReplicaRole | null = null;
  /** Set once the node persisted a new role: it answers nothing until it restarted. */
  private resetting: string | null = null;
  /** Fault hook: a lost node (its region gone) answers nothing and sends nothing. */
  private lost = false;
  /**
   * Fault hook: a partitioned node is cut off from the other members (it
   * neither answers nor sends calls between nodes) but clients still reach it:
   * the setting of a split brain.
   */
  private partitioned = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.node = { sql: ctx.storage.sql, schema: new Schema(ctx.storage.sql) };
    this.store = new NodeStore(ctx.storage.kv);
    this.member = parseNodeName(ctx.id.name)?.member ?? "";
    ctx.blockConcurrencyWhile(async () => {
      migrate(ctx.storage);
      // Tables made before row capture existed get their capture triggers now.
      ctx.storage.transactionSync(() => syncCaptureTriggers(this.node.sql, this.node.schema));
      this.lost = this.store.getMeta("lost") === "1";
      if (this.lost) return;
      this.partitioned = this.store.getMeta("partitioned") === "1";
      const saved = this.store.getMeta("role");
      let role: RoleName =
        saved === "master" || saved === "replica"
          ? saved
          : this.member === FIRST_MASTER
            ? "master"
            : "replica";
      // Before a master sends or grants anything, the directory says whether a
      // later term named another master (a handover or a promotion it missed).
      if (role === "master") {
        const still = await this.stillMaster();
        if (still === "deleting") {
          // No role: the calls that started it fail, and it resets at once, so
          // a call after the deletion starts it afresh and looks again.
          this.resetting = DELETING;
          ctx.waitUntil(
            new Promise<void>((resolve) => setTimeout(resolve, 0)).then(() => ctx.abort(DELETING)),
          );
          return;
        }
        if (!still) role = "replica";
      }
      if (saved !== role) this.store.setMeta("role", role);
      this.role =
        role === "master"
          ? new MasterRole(
              ctx,
              env,
              this.node,
              this.store,
              (reason) => this.restart(reason),
              () => this.partitioned,
            )
          : new ReplicaRole(ctx, env, this.node, this.store, () => this.partitioned);
    });
  }

  /**
   * Whether the directory still names this node master of the term it knows.
   * If not, it takes the later term into storage (its log is checked against
   * that term's first LSN when its master writes) and starts as a replica.
   */
  private async stillMaster(): Promise<boolean | "deleting"> {
    const cluster = parseNodeName(this.ctx.id.name)?.cluster;
    if (cluster === undefined) return true;
    const record = await directoryStub(this.env, cluster).read();
    if (record.deleting === true) return "deleting";
    const term = Number(this.store.getMeta("term") ?? 1);
    if (record.term < term || (record.term === term && record.master === this.member)) return true;
    this.ctx.storage.transactionSync(() => {
      this.store.setMeta("term", String(Math.max(term, record.term)));
      this.store.setMeta("term_checked", String(term));
    });
    return false;
  }

  private current(): MasterRole | ReplicaRole {
    if (this.lost) throw new Error(`${this.member} is lost (fault injection): it answers nothing`);
    if (this.resetting !== null || this.role === null) {
      throw new Error(`this node is being reset into its new role (${this.resetting}); retry`);
    }
    return this.role;
  }

  /** Calls between members fail while the node is partitioned (fault hook). */
  private peer(): void {
    if (this.partitioned) {
      throw new Error(`${this.member} is partitioned from the cluster (fault injection)`);
    }
  }

  private master(): MasterRole {
    const role = this.current();
    if (role.kind !== "master") throw new Error(NOT_MASTER);
    return role;
  }

  /** The master role, for a call that asks work of it: the call wakes it (scale to zero). */
  private busyMaster(): MasterRole {
    const role = this.master();
    role.core.idle.touch();
    return role;
  }

  private replica(): ReplicaRole {
    const role = this.current();
    if (role.kind !== "replica") throw new Error("this node is the master, not a replica");
    return role;
  }

  /**
   * The role in storage changed: refuse everything, make the writes durable,
   * and reset the object, which starts again in the role storage says.
   */
  private restart(reason: string): void {
    this.resetting = reason;
    this.ctx.waitUntil(
      (async () => {
        await this.ctx.storage.sync();
        this.ctx.abort(`role change: ${reason}`);
      })(),
    );
  }

  // ------------------------------------------------------------ promotion

  async prepareTerm(cluster: string, term: number): Promise<PrepareAnswer> {
    this.peer();
    const role = this.current();
    if (role.kind === "replica") return { member: this.member, ...role.prepareTerm(term) };
    const core = role.core;
    core.ensureCluster(cluster);
    const answer: PrepareAnswer = {
      member: this.member,
      knownTerm: Math.max(term, core.term),
      lastTerm: this.store.lastTerm(),
      lastLsn: core.lsn,
      refusal: null,
    };
    // A master that hears of a later term steps down at once; it may still be the newest log.
    if (term > core.term) core.stepDown(term);
    return answer;
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
    const role = this.current();
    const record = await directoryStub(this.env, cluster).read();
    if (record.master !== this.member)
      throw new Error(`${NOT_MASTER}: the directory names ${record.master}`);
    if (role.kind === "master") return { master: this.member, term: record.term };
    const handover = record.handover;
    if (handover === undefined) throw new Error(`term ${record.term} has no handover to take`);
    // Checked before the directory moved; a stopped node (a test fault) takes over all the same.
    const refusal = role.promotable(handover.lastLsn, record.term, true);
    if (refusal !== null) throw new Error(`${this.member} cannot take over: ${refusal}`);
    installHandover(this.ctx.storage, this.store, {
      cluster,
      self: this.member,
      term: record.term,
      handover,
      now: Date.now(),
    });
    this.restart(`master of term ${record.term}`);
    return { master: this.member, term: record.term };
  }

  /**
   * DELETE /admin/clusters/{cluster} (workers/cluster-delete.ts): this member
   * stops sending and answering, drops its alarm and every byte it stores, and
   * resets; a later call finds an empty object.
   */
  async destroy(): Promise<void> {
    if (this.role?.kind === "master") this.role.core.halt(DELETING);
    this.resetting = DELETING;
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.ctx.waitUntil(
      (async () => {
        await this.ctx.storage.sync();
        this.ctx.abort(DELETING);
      })(),
    );
  }

  override async alarm(): Promise<void> {
    if (this.lost || this.resetting !== null || this.role === null) return;
    if (this.role.kind === "master") {
      this.role.alarm();
      return;
    }
    const cluster = parseNodeName(this.ctx.id.name)?.cluster;
    if (cluster === undefined || this.partitioned || !this.role.watchdog.due(Date.now())) return;
    // The master has been silent for master_failover_ms: promote without it,
    // if a majority of the members has not heard from it either.
    const outcome = await promoteWithoutMaster(this.env, cluster, undefined, {
      knownTerm: this.role.term,
      silentForMs: this.role.watchdog.periodMs,
    });
    if (!outcome.ok)
      console.warn(`${cluster}/${this.member}: automatic promotion: ${outcome.error.message}`);
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
