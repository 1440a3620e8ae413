/**
 * The master role of a node: runs each write transaction atomically with its
 * log append and its saved result, assigns LSNs, ships the log through one
 * relay per replica, and answers a commit only when every replica of its wait
 * set has acked it (full sync). Its parts: the state and wiring (core.ts), the
 * write path (writes.ts), the admin side (admin.ts), the fault routes
 * (faults.ts), exports (exports.ts) and the timed jobs (jobs.ts).
 */
import { indexWholeLog } from "../log-results";
import type { NodeStore } from "../node-store";
import { ensureMasterFlag } from "../sqlite/apply";
import type { SqlNode } from "../sqlite/schema";
import { MasterAdmin } from "./admin";
import { MasterCore } from "./core";
import { MasterExports } from "./exports";
import { MasterFaults } from "./faults";
import { MasterHandover } from "./handover";
import { runJob } from "./jobs";
import { MasterWrites } from "./writes";

export class MasterRole {
  readonly kind = "master";
  readonly core: MasterCore;
  readonly writes: MasterWrites;
  readonly admin: MasterAdmin;
  readonly faults: MasterFaults;
  readonly handover: MasterHandover;
  readonly exports: MasterExports;

  /** Builds the role on a node's storage; call inside blockConcurrencyWhile. */
  constructor(
    ctx: DurableObjectState,
    env: Env,
    node: SqlNode,
    store: NodeStore,
    restartNode: (reason: string) => void,
    partitioned: () => boolean,
  ) {
    // A master's triggers fire: the flag a replica keeps set goes.
    ctx.storage.transactionSync(() => ensureMasterFlag(node.sql));
    // A former replica's log holds results its lookup lacks: indexed before
    // anything is answered, but for those past the retention (the tunables are
    // the cluster's: a promotion installed them). Those a replica's own pruning
    // (once a minute) had not dropped yet go too: a key free on the old master
    // is free here. Nothing waits for acks yet: every commit is answered.
    const expiredBefore = Date.now() - store.loadTunables().idempotency_retention_ms;
    indexWholeLog(ctx.storage, store, expiredBefore);
    ctx.storage.transactionSync(() => store.pruneResults(expiredBefore, store.lastLsn()));
    this.core = new MasterCore(ctx, env, node, store, runJob, restartNode, partitioned);
    this.writes = new MasterWrites(this.core);
    this.admin = new MasterAdmin(this.core);
    this.faults = new MasterFaults(this.core);
    this.handover = new MasterHandover(this.core);
    this.exports = new MasterExports(this.core);
    this.core.load();
  }

  /** The node's alarm: the durable backstop of the timed jobs. */
  alarm(): void {
    this.core.jobs.onAlarm();
  }
}
