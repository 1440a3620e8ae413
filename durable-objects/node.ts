/**
 * A cluster member: one Durable Object class for every node, master or
 * replica. It owns the storage both roles work on (user tables, the log, the
 * saved results) and forwards each call to the role it holds; the roles are in
 * master/ and replica/, the rules they apply in core/. A node that has never
 * been told its role takes the one its first call implies: a write or an
 * admin call makes the first master, a log message a replica.
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
import { migrate } from "../migrations";
import { MasterRole } from "./master/role";
import type { NodeRpc } from "./node-rpc";
import { NodeStore } from "./node-store";
import { ReplicaRole } from "./replica/role";
import { syncCaptureTriggers } from "./sqlite/capture";
import { Schema, type SqlNode } from "./sqlite/schema";

type RoleName = "master" | "replica";

export class ClusterNode extends DurableObject<Env> implements NodeRpc {
  private readonly node: SqlNode;
  private readonly store: NodeStore;
  private role: MasterRole | ReplicaRole | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.node = { sql: ctx.storage.sql, schema: new Schema(ctx.storage.sql) };
    this.store = new NodeStore(ctx.storage.kv);
    ctx.blockConcurrencyWhile(async () => {
      migrate(ctx.storage);
      // Tables made before row capture existed get their capture triggers now.
      ctx.storage.transactionSync(() => syncCaptureTriggers(this.node.sql, this.node.schema));
      const role = this.store.getMeta("role");
      if (role === "master" || role === "replica") this.take(role);
    });
  }

  private take(role: RoleName): MasterRole | ReplicaRole {
    if (this.role === null) this.store.setMeta("role", role);
    this.role =
      role === "master"
        ? new MasterRole(this.ctx, this.env, this.node, this.store)
        : new ReplicaRole(this.ctx, this.env, this.node, this.store);
    return this.role;
  }

  private master(): MasterRole {
    const role = this.role ?? this.take("master");
    if (role.kind !== "master") throw new Error("this node is not the master");
    return role;
  }

  private replica(): ReplicaRole {
    const role = this.role ?? this.take("replica");
    if (role.kind !== "replica") throw new Error("this node is the master, not a replica");
    return role;
  }

  override async alarm(): Promise<void> {
    if (this.role?.kind === "master") this.role.alarm();
  }

  // ------------------------------------------------------------ master: data

  exec(request: ExecRequest) {
    return this.master().writes.exec(request);
  }

  query(request: QueryRequest) {
    return this.master().writes.query(request);
  }

  ack(request: AckRequest) {
    return this.master().writes.ack(request);
  }

  pullLog(request: PullRequest) {
    return this.master().writes.pullLog(request);
  }

  // ------------------------------------------------------------ master: admin

  status(cluster: string) {
    return this.master().admin.status(cluster);
  }

  metricsText(cluster: string) {
    return this.master().admin.metricsText(cluster);
  }

  getTunables(cluster: string) {
    return this.master().admin.getTunables(cluster);
  }

  patchTunables(cluster: string, patch: unknown) {
    return this.master().admin.patchTunables(cluster, patch);
  }

  verify(cluster: string) {
    return this.master().admin.verify(cluster);
  }

  addReplica(cluster: string) {
    return this.master().admin.addReplica(cluster);
  }

  removeReplica(cluster: string, id: string) {
    return this.master().admin.removeReplica(cluster, id);
  }

  async replicaIds(cluster: string): Promise<string[]> {
    return this.master().admin.replicaIds(cluster);
  }

  // ------------------------------------------------------------ master: faults

  crash(cluster: string) {
    return this.master().faults.crash(cluster);
  }

  setReplicaStopped(cluster: string, id: string, stopped: boolean) {
    return this.master().faults.setReplicaStopped(cluster, id, stopped);
  }

  setReplicaDisconnected(cluster: string, id: string, disconnected: boolean) {
    return this.master().faults.setReplicaDisconnected(cluster, id, disconnected);
  }

  crashReplica(cluster: string, id: string, midBatch: boolean) {
    return this.master().faults.crashReplica(cluster, id, midBatch);
  }

  setMessageFaults(cluster: string, config: MessageFaultConfig) {
    return this.master().faults.setMessageFaults(cluster, config);
  }

  setReplicaDelay(cluster: string, id: string, ms: number) {
    return this.master().faults.setReplicaDelay(cluster, id, ms);
  }

  tamperReplica(cluster: string, id: string, sql: string) {
    return this.master().faults.tamperReplica(cluster, id, sql);
  }

  rewindRelay(cluster: string, id: string, lsn: number) {
    return this.master().faults.rewindRelay(cluster, id, lsn);
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

  appliedPosition() {
    return this.replica().appliedPosition();
  }
}
