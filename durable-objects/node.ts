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
import { DurableObject } from "cloudflare:workers";
import type { MessageFaultConfig } from "../core/message-faults";
import type {
  AckRequest,
  AppendRequest,
  AppendResponse,
  ExecRequest,
  NodeChecksums,
  PullRequest,
  QueryRequest,
  SnapshotMessage,
} from "../core/protocol";
import { FIRST_MASTER, NOT_MASTER, parseNodeName } from "../core/members";
import { migrate } from "../migrations";
import { directoryStub } from "./directory";
import { MasterRole } from "./master/role";
import type { NodeRpc } from "./node-rpc";
import { NodeStore } from "./node-store";
import { ReplicaRole } from "./replica/role";
import { syncCaptureTriggers } from "./sqlite/capture";
import { Schema, type SqlNode } from "./sqlite/schema";
import { installHandover } from "./takeover";

type RoleName = "master" | "replica";

export class ClusterNode extends DurableObject<Env> implements NodeRpc {
  private readonly node: SqlNode;
  private readonly store: NodeStore;
  private readonly member: string;
  private role: MasterRole | ReplicaRole | null = null;
  /** Set once the node persisted a new role: it answers nothing until it restarted. */
  private resetting: string | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.node = { sql: ctx.storage.sql, schema: new Schema(ctx.storage.sql) };
    this.store = new NodeStore(ctx.storage.kv);
    this.member = parseNodeName(ctx.id.name)?.member ?? "";
    ctx.blockConcurrencyWhile(async () => {
      migrate(ctx.storage);
      // Tables made before row capture existed get their capture triggers now.
      ctx.storage.transactionSync(() => syncCaptureTriggers(this.node.sql, this.node.schema));
      const saved = this.store.getMeta("role");
      const role: RoleName =
        saved === "master" || saved === "replica"
          ? saved
          : this.member === FIRST_MASTER
            ? "master"
            : "replica";
      if (saved === null) this.store.setMeta("role", role);
      this.role =
        role === "master"
          ? new MasterRole(ctx, env, this.node, this.store, () => this.restart("stepped down"))
          : new ReplicaRole(ctx, env, this.node, this.store);
    });
  }

  private current(): MasterRole | ReplicaRole {
    if (this.resetting !== null || this.role === null) {
      throw new Error(`this node is being reset into its new role (${this.resetting}); retry`);
    }
    return this.role;
  }

  /**
   * The master role, once this incarnation has checked with the directory that
   * no later term named another master (a handover whose outcome it never
   * learned, a promotion while it was away): if one did, it steps down.
   */
  private async master(): Promise<MasterRole> {
    const role = this.current();
    if (role.kind !== "master") throw new Error(NOT_MASTER);
    this.checked ??= this.checkTerm(role);
    await this.checked;
    return role;
  }

  private checked: Promise<void> | null = null;

  private async checkTerm(role: MasterRole): Promise<void> {
    const cluster = parseNodeName(this.ctx.id.name)?.cluster;
    if (cluster === undefined) return;
    try {
      const record = await directoryStub(this.env, cluster).read();
      const core = role.core;
      if (record.term > core.term || (record.term === core.term && record.master !== this.member)) {
        core.stepDown(record.term);
        throw new Error(`${NOT_MASTER}: term ${record.term} is ${record.master}'s`);
      }
    } catch (error) {
      this.checked = null;
      throw error;
    }
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

  /** On the master: hand over to `named` (or the best coherent replica), POST …/promote. */
  async promote(cluster: string, named: string | undefined) {
    return (await this.master()).handover.promote(cluster, named);
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

  override async alarm(): Promise<void> {
    if (this.resetting === null && this.role?.kind === "master") this.role.alarm();
  }

  // ------------------------------------------------------------ master: data

  async exec(request: ExecRequest) {
    return (await this.master()).writes.exec(request);
  }

  async query(request: QueryRequest) {
    return (await this.master()).writes.query(request);
  }

  async ack(request: AckRequest) {
    return (await this.master()).writes.ack(request);
  }

  async pullLog(request: PullRequest) {
    return (await this.master()).writes.pullLog(request);
  }

  // ------------------------------------------------------------ master: admin

  async status(cluster: string) {
    return (await this.master()).admin.status(cluster);
  }

  async metricsText(cluster: string) {
    return (await this.master()).admin.metricsText(cluster);
  }

  async getTunables(cluster: string) {
    return (await this.master()).admin.getTunables(cluster);
  }

  async patchTunables(cluster: string, patch: unknown) {
    return (await this.master()).admin.patchTunables(cluster, patch);
  }

  async verify(cluster: string) {
    return (await this.master()).admin.verify(cluster);
  }

  async addReplica(cluster: string) {
    return (await this.master()).admin.addReplica(cluster);
  }

  async removeReplica(cluster: string, id: string) {
    return (await this.master()).admin.removeReplica(cluster, id);
  }

  async replicaIds(cluster: string): Promise<string[]> {
    return (await this.master()).admin.replicaIds(cluster);
  }

  // ------------------------------------------------------------ master: faults

  async crash(cluster: string) {
    return (await this.master()).faults.crash(cluster);
  }

  async setReplicaStopped(cluster: string, id: string, stopped: boolean) {
    return (await this.master()).faults.setReplicaStopped(cluster, id, stopped);
  }

  async setReplicaDisconnected(cluster: string, id: string, disconnected: boolean) {
    return (await this.master()).faults.setReplicaDisconnected(cluster, id, disconnected);
  }

  async crashReplica(cluster: string, id: string, midBatch: boolean) {
    return (await this.master()).faults.crashReplica(cluster, id, midBatch);
  }

  async setMessageFaults(cluster: string, config: MessageFaultConfig) {
    return (await this.master()).faults.setMessageFaults(cluster, config);
  }

  async setReplicaDelay(cluster: string, id: string, ms: number) {
    return (await this.master()).faults.setReplicaDelay(cluster, id, ms);
  }

  async tamperReplica(cluster: string, id: string, sql: string) {
    return (await this.master()).faults.tamperReplica(cluster, id, sql);
  }

  async rewindRelay(cluster: string, id: string, lsn: number) {
    return (await this.master()).faults.rewindRelay(cluster, id, lsn);
  }

  // ------------------------------------------------------------ replica

  append(request: AppendRequest): Promise<AppendResponse> {
    return this.replica().append(request);
  }

  installSnapshot(message: SnapshotMessage) {
    return this.replica().installSnapshot(message);
  }

  replicaQuery(request: QueryRequest, servedBy: string) {
    return this.replica().replicaQuery(request, servedBy);
  }

  checksums(node: string, atLsn: number, waitMs: number): Promise<NodeChecksums> {
    return this.replica().checksums(node, atLsn, waitMs);
  }

  setStopped(stopped: boolean) {
    return this.replica().setStopped(stopped);
  }

  crashNode(midBatch: boolean) {
    return this.replica().crashNode(midBatch);
  }

  tamper(sql: string) {
    return this.replica().tamper(sql);
  }

  setFaultDelay(ms: number) {
    return this.replica().setFaultDelay(ms);
  }

  async promotable(lastLsn: number, term: number): Promise<string | null> {
    return this.replica().promotable(lastLsn, term);
  }

  appliedPosition() {
    return this.replica().appliedPosition();
  }
}
