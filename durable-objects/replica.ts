/**
 * A replica: applies the master's log strictly in LSN order, one transaction
 * per batch, and acks its applied LSN. Records it already has are skipped and
 * still acked; a batch that starts past its next LSN is answered with its
 * applied LSN so the relay resends from there. It serves reads under the lease
 * the master grants with every message.
 */
import { DurableObject } from "cloudflare:workers";
import { DueQueue } from "../core/due-queue";
import { ApiError } from "../core/errors";
import {
  type AckRequest,
  type AppendRequest,
  type AppendResponse,
  type LogRecord,
  type NodeChecksums,
  type PullResponse,
  type QueryRequest,
  type ReplicaQueryOutcome,
  type SnapshotMessage,
  masterObjectName,
} from "../core/protocol";
import { quoteIdent } from "../core/sql-lexer";
import { isReservedName } from "../core/statement-guard";
import { REPLICA_MIGRATIONS, migrate } from "../migrations";
import type { MasterDO } from "./master";
import { ReplicaReadGate } from "./replica-read-gate";
import { SNAPSHOT_ROWID_COLUMN } from "./snapshot-source";
import { nodeChecksums, runQuery } from "./sql-helpers";

const PULL_BATCH_RECORDS = 1000;
/** Longest a fetch for a held ack may wait (debug_ack_delay_ms is at most a minute). */
const MAX_HOLD_MS = 60_000;
/** How long a due ack waits for a message to ride on before it goes out as its own call. */
const OWN_ACK_GRACE_MS = 20;

export class ReplicaDO extends DurableObject<Env> {
  private appliedLsn = 0;
  private identity = "";
  private stopped = false;
  /** The lease, the guard band and the commit point: what a strong read here may return. */
  private readonly strongReads = new ReplicaReadGate();
  // Acks that fall due ride on the next reply. The master's relay sends a message
  // when an ack falls due, so the queue's timer fires OWN_ACK_GRACE_MS late: only a
  // replica that heard nothing since sends the ack as its own call.
  private readonly ackDelays = new DueQueue(undefined, () => this.flushAck(), OWN_ACK_GRACE_MS);
  private pulling = false;
  /** Set while a snapshot is being installed: no applies, no reads. */
  private rebuilding = false;
  /** Fault hook: extra sleep per message on this replica only (a slow node). */
  private faultDelayMs = 0;
  /** Fault hook: abort partway through the next batch. */
  private crashMidBatch = false;
  /** The deferred ack waiting to go out (and since when), and the highest LSN acked that way. */
  private readyAck: AckRequest | null = null;
  private readyAckSince = 0;
  private ackSentLsn = 0;
  private masterForAcks: DurableObjectStub<MasterDO> | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      migrate(ctx.storage, REPLICA_MIGRATIONS);
      for (const row of ctx.storage.sql.exec<{ key: string; value: string }>(
        "SELECT key, value FROM _repl_meta",
      )) {
        if (row.key === "applied_lsn") this.appliedLsn = Number(row.value);
        if (row.key === "identity") this.identity = row.value;
        if (row.key === "stopped") this.stopped = row.value === "1";
        if (row.key === "rebuilding") this.rebuilding = true;
      }
    });
  }

  /** Applies a batch (or a heartbeat: no records) and returns the ack. */
  async append(request: AppendRequest): Promise<AppendResponse> {
    // A fetch for a held ack waits here until the ack is due: a timer inside a
    // live call fires when due, one set by a call that has ended may not.
    if (request.holdMs !== undefined && request.holdMs > 0) {
      await sleep(Math.min(request.holdMs, MAX_HOLD_MS));
    }
    this.ackDelays.drain();
    if (this.stopped) return this.refusal(request);
    if (this.identity === "") this.setMeta("identity", `${request.cluster}/${request.replicaId}`);
    if (this.rebuilding) {
      // A heartbeat during a rebuild: answer it, apply nothing, take no lease.
      this.strongReads.learn(request, false);
      return {
        appliedLsn: this.appliedLsn,
        gap: request.records.length > 0,
        echoSentAt: request.sentAt,
        skipped: 0,
        applied: 0,
        ackDelayedMs: 0,
        rebuilding: true,
      };
    }
    const delay = request.settings.applyDelayMs + this.faultDelayMs;
    if (delay > 0) await sleep(delay);
    if (this.stopped) return this.refusal(request);
    const outcome = this.applyBatch(request.records);
    // The lease is taken only after the records that came with it are applied.
    this.strongReads.learn(request, !outcome.gap);
    if (request.pull && request.masterLsn > this.appliedLsn && !this.rebuilding) {
      this.startPulling(request);
    }
    // Acks the master has not taken may be lost: they go again.
    if (request.ackedLsn < this.ackSentLsn) this.ackSentLsn = request.ackedLsn;
    const appliedLsn = this.appliedLsn;
    const ackDeferred = request.settings.ackDelayMs > 0 && !outcome.gap;
    if (ackDeferred) this.deferAck(request, appliedLsn);
    const due = this.takeReadyAck();
    return {
      appliedLsn,
      gap: outcome.gap,
      echoSentAt: request.sentAt,
      skipped: outcome.skipped,
      applied: outcome.applied,
      ackDelayedMs: 0,
      ackDeferred,
      ...(due === undefined ? {} : { dueAck: due }),
    };
  }

  /**
   * debug_ack_delay_ms: the ack leaves `ackDelayMs` after the apply, as its own
   * call to the master, so the relay's window is not held for the delay. Acks
   * that fall due together go out as one (an ack covers every earlier LSN).
   */
  private deferAck(request: AppendRequest, appliedLsn: number): void {
    this.ackDelays.add(request.settings.ackDelayMs, (held) => {
      if (appliedLsn <= (this.readyAck?.appliedLsn ?? this.ackSentLsn)) return;
      this.readyAck = {
        cluster: request.cluster,
        replicaId: request.replicaId,
        appliedLsn,
        echoSentAt: request.sentAt,
        ackDelayedMs: held,
      };
      this.readyAckSince = performance.now();
    });
  }

  /** Takes the ack that fell due, to piggyback it on a reply. */
  private takeReadyAck(): AckRequest | undefined {
    const ack = this.readyAck;
    this.readyAck = null;
    if (ack === null || ack.appliedLsn <= this.ackSentLsn) return undefined;
    this.ackSentLsn = ack.appliedLsn;
    // The effective delay runs until the ack leaves, not until it fell due.
    return { ...ack, ackDelayedMs: ack.ackDelayedMs + (performance.now() - this.readyAckSince) };
  }

  /** No reply to ride on: the due ack goes out as its own call. */
  private flushAck(): void {
    if (this.stopped) return;
    const ack = this.takeReadyAck();
    if (ack === undefined) return;
    const send = (retry: boolean): void => {
      this.masterForAcks ??= this.masterStub(ack.cluster);
      this.masterForAcks.ack(ack).catch((error: unknown) => {
        this.masterForAcks = null;
        if (retry) send(false);
        else console.warn(`ack from ${ack.replicaId} lost; the next one covers it`, error);
      });
    };
    send(true);
  }

  private masterStub(cluster: string): DurableObjectStub<MasterDO> {
    const ns = this.env.MASTER as unknown as DurableObjectNamespace<MasterDO>;
    return ns.get(ns.idFromName(masterObjectName(cluster)));
  }

  /** A stopped replica answers nothing useful; the relay treats this as a failed call. */
  private refusal(request: AppendRequest): AppendResponse {
    return {
      refused: `${request.replicaId} is stopped`,
      appliedLsn: this.appliedLsn,
      gap: false,
      echoSentAt: request.sentAt,
      skipped: 0,
      applied: 0,
      ackDelayedMs: 0,
    };
  }

  private applyBatch(records: readonly LogRecord[]): {
    gap: boolean;
    skipped: number;
    applied: number;
  } {
    let skipped = 0;
    let applied = 0;
    let gap = false;
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      for (const record of records) {
        if (record.lsn <= this.appliedLsn + applied) {
          skipped++;
          continue;
        }
        if (record.lsn !== this.appliedLsn + applied + 1) {
          gap = true;
          break;
        }
        for (const statement of record.statements) {
          // Read every result through: a statement left open (RETURNING) blocks the commit.
          sql.exec(statement.sql, ...statement.params).toArray();
        }
        applied++;
        if (this.crashMidBatch && applied * 2 >= records.length) {
          this.ctx.abort(
            `crashed mid-batch through the fault route, ${applied} of ${records.length} records applied`,
          );
        }
      }
      if (applied > 0) {
        sql.exec(
          "INSERT OR REPLACE INTO _repl_meta (key, value) VALUES ('applied_lsn', ?)",
          String(this.appliedLsn + applied),
        );
      }
    });
    this.appliedLsn += applied;
    return { gap, skipped, applied };
  }

  /**
   * Catch-up: fetch the log in order, in bounded batches, until the master says
   * the batch reached its LSN. One loop at a time; a failure ends it, and the
   * next heartbeat that asks for a pull starts a new one.
   */
  private startPulling(request: AppendRequest): void {
    if (this.pulling) return;
    this.pulling = true;
    const master = this.masterStub(request.cluster);
    const loop = async () => {
      try {
        for (;;) {
          if (this.stopped) return;
          const response = (await master.pullLog({
            cluster: request.cluster,
            replicaId: request.replicaId,
            fromLsn: this.appliedLsn + 1,
            maxRecords: PULL_BATCH_RECORDS,
          })) as PullResponse;
          if (this.stopped) return;
          if (request.settings.applyDelayMs > 0) await sleep(request.settings.applyDelayMs);
          if (response.snapshot) return;
          this.applyBatch(response.records);
          if (response.caughtUp || response.records.length === 0) return;
        }
      } catch (error) {
        console.warn(`pull by ${request.replicaId} stopped`, error);
      } finally {
        this.pulling = false;
      }
    };
    this.ctx.waitUntil(loop());
  }

  async query(request: QueryRequest, servedBy: string): Promise<ReplicaQueryOutcome> {
    this.ackDelays.drain();
    this.flushAck();
    if (this.stopped) return { kind: "redirect", reason: "replica stopped" };
    if (this.identity === "") return { kind: "redirect", reason: "replica not initialised" };
    if (this.rebuilding) return { kind: "redirect", reason: "replica rebuilding from a snapshot" };
    const strong = request.consistency === "strong";
    if (strong && !this.strongReads.leaseValid(Date.now())) {
      return { kind: "redirect", reason: "no valid lease" };
    }
    if (request.consistency === "bookmark" && this.appliedLsn < request.minLsn) {
      return { kind: "redirect", reason: "behind the bookmark" };
    }
    try {
      const result = runQuery(this.ctx.storage.sql, request.sql, request.params, request.format);
      // Read first, at this LSN, then wait (not holding the event loop) until it is acknowledged.
      const appliedLsn = this.appliedLsn;
      const late = strong ? await this.strongReads.settle(appliedLsn) : null;
      if (late !== null) return { kind: "redirect", reason: late };
      return { kind: "rows", response: { ...result, servedBy, appliedLsn } };
    } catch (error) {
      if (error instanceof ApiError) return { kind: "error", error: error.toBody() };
      throw error;
    }
  }

  /**
   * Rebuild from the master's snapshot: `begin` drops every user object and
   * creates the tables empty, `rows` installs a chunk (rowids kept, so future
   * inserts get the same rowids as on the master), `end` creates indexes,
   * triggers and views, restores AUTOINCREMENT counters and sets the applied
   * LSN to the snapshot's. Each step is one transaction.
   */
  async installSnapshot(message: SnapshotMessage): Promise<{ appliedLsn: number }> {
    if (this.stopped) throw new Error("replica is stopped");
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      if (message.phase === "begin") {
        this.rebuilding = true;
        this.strongReads.dropLease();
        this.dropUserObjects();
        for (const table of message.tables) sql.exec(table.sql);
        this.setMeta("rebuilding", String(message.lsn));
      } else if (message.phase === "rows") {
        const columns = message.columns.map((c) =>
          c === SNAPSHOT_ROWID_COLUMN ? "rowid" : quoteIdent(c),
        );
        const insert = `INSERT INTO ${quoteIdent(message.table)} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`;
        for (const row of message.rows) sql.exec(insert, ...(row as SqlStorageValue[]));
      } else {
        for (const statement of message.after) sql.exec(statement);
        if (message.sequences.length > 0) {
          sql.exec("DELETE FROM sqlite_sequence");
          for (const { name, seq } of message.sequences) {
            sql.exec("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", name, seq);
          }
        }
        sql.exec("DELETE FROM _repl_meta WHERE key = 'rebuilding'");
        sql.exec(
          "INSERT OR REPLACE INTO _repl_meta (key, value) VALUES ('applied_lsn', ?)",
          String(message.lsn),
        );
        this.appliedLsn = message.lsn;
        this.ackSentLsn = Math.min(this.ackSentLsn, message.lsn);
        this.rebuilding = false;
      }
    });
    return { appliedLsn: this.appliedLsn };
  }

  private dropUserObjects(): void {
    const sql = this.ctx.storage.sql;
    const objects = sql
      .exec<{ type: string; name: string }>(
        "SELECT type, name FROM sqlite_master WHERE type IN ('view', 'trigger', 'table')",
      )
      .toArray()
      .filter((o) => !isReservedName(o.name, true));
    for (const kind of ["view", "trigger", "table"]) {
      for (const o of objects.filter((x) => x.type === kind)) {
        sql.exec(`DROP ${kind.toUpperCase()} IF EXISTS ${quoteIdent(o.name)}`);
      }
    }
  }

  /** Checksums once this replica has applied `atLsn` (waits up to `waitMs`). */
  async checksums(node: string, atLsn: number, waitMs: number): Promise<NodeChecksums> {
    if (this.stopped) throw new Error(`${node} is stopped`);
    const until = Date.now() + waitMs;
    while (this.appliedLsn < atLsn && Date.now() < until) await sleep(20);
    return nodeChecksums(this.ctx.storage.sql, node, this.appliedLsn);
  }

  /** Fault hook (the master checks debug_fault_injection before calling). */
  async setStopped(stopped: boolean): Promise<void> {
    this.stopped = stopped;
    this.strongReads.dropLease();
    this.setMeta("stopped", stopped ? "1" : "0");
  }

  /**
   * Fault hook: crash now, or partway through the next batch it applies (after
   * half its records, inside the batch's transaction, which is then lost).
   */
  async crash(midBatch: boolean): Promise<void> {
    if (midBatch) this.crashMidBatch = true;
    else setTimeout(() => this.ctx.abort("crashed through the fault route"), 0);
  }

  /** Fault hook: make this replica slow by `ms` per message (0 ends it). */
  async setFaultDelay(ms: number): Promise<void> {
    this.faultDelayMs = ms;
  }

  async appliedPosition(): Promise<{ appliedLsn: number; stopped: boolean }> {
    return { appliedLsn: this.appliedLsn, stopped: this.stopped };
  }

  private setMeta(key: string, value: string): void {
    this.ctx.storage.sql.exec(
      "INSERT OR REPLACE INTO _repl_meta (key, value) VALUES (?, ?)",
      key,
      value,
    );
    if (key === "identity") this.identity = value;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
