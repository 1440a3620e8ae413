/**
 * What every cluster member is, whatever its role: its storage, the role it
 * holds (master or replica, chosen at start from storage and the directory),
 * the reset into a new role, its alarm, and the steps of promotion and
 * deletion that act on the node itself. The RPC methods are in node.ts
 * (ClusterNode), each forwarding to these or to the role.
 */
import { DurableObject } from "cloudflare:workers";
import type { PrepareAnswer } from "../core/failover";
import { FIRST_MASTER, NOT_MASTER, parseNodeName } from "../core/members";
import { migrate } from "../migrations";
import { directoryStub } from "./directory";
import { promoteWithoutMaster } from "./failover";
import { MasterRole } from "./master/role";
import { NodeStore } from "./node-store";
import { ReplicaRole } from "./replica/role";
import { syncCaptureTriggers } from "./sqlite/capture";
import { Schema, type SqlNode } from "./sqlite/schema";
import { installHandover } from "./takeover";

type RoleName = "master" | "replica";

const DELETING = "the cluster is being deleted";

export abstract class NodeHost extends DurableObject<Env> {
  protected readonly node: SqlNode;
  protected readonly store: NodeStore;
  protected readonly member: string;
  protected role: MasterRole | ReplicaRole | null = null;
  /** Set once the node persisted a new role: it answers nothing until it restarted. */
  protected resetting: string | null = null;
  /** Started while its cluster was being deleted: it took no role. */
  private startedDeleting = false;
  /** Fault hook: a lost node (its region gone) answers nothing and sends nothing. */
  protected lost = false;
  /**
   * Fault hook: a partitioned node is cut off from the other members (it
   * neither answers nor sends calls between nodes) but clients still reach it:
   * the setting of a split brain.
   */
  protected partitioned = false;

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
          // No role: every call fails and resets it after (current), so a call
          // after the deletion starts it afresh and looks again. The deletion's
          // own call (destroy) runs here all the same.
          this.resetting = DELETING;
          this.startedDeleting = true;
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
    const stored = this.store.getMeta("term");
    if (stored === null && record.master === this.member) {
      // A new cluster's first master: its term is the directory's (above 1 for
      // a name whose cluster was deleted, firstRecord).
      this.store.setMeta("term", String(record.term));
      return true;
    }
    const term = Number(stored ?? 1);
    if (record.term < term || (record.term === term && record.master === this.member)) return true;
    this.ctx.storage.transactionSync(() => {
      this.store.setMeta("term", String(Math.max(term, record.term)));
      this.store.setMeta("term_checked", String(term));
    });
    return false;
  }

  protected current(): MasterRole | ReplicaRole {
    if (this.lost) throw new Error(`${this.member} is lost (fault injection): it answers nothing`);
    if (this.resetting !== null || this.role === null) {
      if (this.startedDeleting) {
        this.ctx.waitUntil(
          new Promise<void>((resolve) => setTimeout(resolve, 0)).then(() =>
            this.ctx.abort(DELETING),
          ),
        );
      }
      throw new Error(`this node is being reset into its new role (${this.resetting}); retry`);
    }
    return this.role;
  }

  /** Calls between members fail while the node is partitioned (fault hook). */
  protected peer(): void {
    if (this.partitioned) {
      throw new Error(`${this.member} is partitioned from the cluster (fault injection)`);
    }
  }

  protected master(): MasterRole {
    const role = this.current();
    if (role.kind !== "master") throw new Error(NOT_MASTER);
    return role;
  }

  /** The master role, for a call that asks work of it: the call wakes it (scale to zero). */
  protected busyMaster(): MasterRole {
    const role = this.master();
    role.core.idle.touch();
    return role;
  }

  protected replica(): ReplicaRole {
    const role = this.current();
    if (role.kind !== "replica") throw new Error("this node is the master, not a replica");
    return role;
  }

  /**
   * The role in storage changed: refuse everything, make the writes durable,
   * and reset the object, which starts again in the role storage says.
   */
  protected restart(reason: string): void {
    this.resetting = reason;
    if (this.role?.kind === "replica") this.role.close();
    this.ctx.waitUntil(
      (async () => {
        await this.ctx.storage.sync();
        this.ctx.abort(`role change: ${reason}`);
      })(),
    );
  }

  /** prepareTerm: fence into `term` and say where this member's log ends. */
  protected fence(cluster: string, term: number): PrepareAnswer {
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

  /**
   * On the member the directory names master: take over with what the
   * directory holds, if this node is not master of that term yet.
   */
  protected async takeOverNow(cluster: string): Promise<{ master: string; term: number }> {
    const role = this.current();
    const record = await directoryStub(this.env, cluster).read();
    if (record.deleting === true) throw new Error(`${DELETING}: no take-over`);
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
  protected async destroyNow(markedTerm: number): Promise<void> {
    const cluster = parseNodeName(this.ctx.id.name)?.cluster;
    if (
      cluster !== undefined &&
      !(await directoryStub(this.env, cluster).stillDeleting(markedTerm))
    ) {
      // A late call of a deletion already finished: the name's next cluster may live here.
      return;
    }
    if (this.role?.kind === "master") this.role.core.halt(DELETING, true);
    if (this.role?.kind === "replica") this.role.close();
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
}
