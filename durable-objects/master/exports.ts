/**
 * Exports on the master: each one a user of the snapshot (SnapshotSource),
 * which holds every user table's rows as they were at one LSN while writes go
 * on. The front door pages the images out (`page`) and formats the dump
 * itself; `end` releases the snapshot. An export whose front door went away
 * without saying so is released once it has been idle for EXPORT_IDLE_MS, so
 * a lost client does not keep a copy of the data and the log past its LSN.
 */
import type { ExportPage, ExportPlan, ExportTable } from "../../core/backup-protocol";
import { loadOrder } from "../../core/dump-order";
import { ApiError } from "../../core/errors";
import { unguardTrigger } from "../../core/trigger-guard";
import type { MasterCore } from "./core";

/** Bytes of row images in one page: the front door holds about this much at a time. */
export const EXPORT_PAGE_BYTES = 512 * 1024;
/** An export not asked for a page for this long is over. */
export const EXPORT_IDLE_MS = 60_000;

interface Lease {
  snapshot: string;
  usedAt: number;
}

export class MasterExports {
  private readonly leases = new Map<string, Lease>();
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly core: MasterCore) {}

  /**
   * A plan whose LSN the cluster has acknowledged: the dump then holds no
   * write a failover could lose, and the change stream from its LSN carries on
   * exactly after it. Waits as a strong read does (UNAVAILABLE past its bound).
   */
  async beginAcknowledged(cluster: string): Promise<ExportPlan> {
    const readAt = Date.now();
    const plan = this.begin(cluster);
    try {
      await this.core.strongReads.settle(plan.lsn, readAt);
    } catch (error) {
      this.end(cluster, plan.id);
      throw error;
    }
    return plan;
  }

  begin(cluster: string): ExportPlan {
    this.core.ensureCluster(cluster);
    this.expireIdle(Date.now());
    const source = this.core.snapshots;
    const plan = source.begin();
    try {
      const counts = source.rowCounts(plan.id);
      const objects = new Map(plan.objects.map((o) => [`${o.type}:${o.name}`, o.sql]));
      const hoisted = new Set(plan.tables.flatMap((t) => t.parentKeys));
      // sqlite3 .dump's order (sqlite_schema's), then parents before the tables naming them.
      const created = plan.objects.filter((o) => o.type === "table").map((o) => o.name);
      const inSchemaOrder = plan.tables
        .map((table, index) => ({ ...table, index }))
        .sort((a, b) => created.indexOf(a.name) - created.indexOf(b.name));
      const tables: ExportTable[] = loadOrder(inSchemaOrder).map((table) => ({
        name: table.name,
        sql: objects.get(`table:${table.name}`) ?? "",
        columns: table.columns,
        rows: counts[table.index] ?? 0,
        index: table.index,
        indexes: table.parentKeys.flatMap((name) => objects.get(`index:${name}`) ?? []),
        settings: plan.fts5Settings.filter((s) => s.table === table.name),
      }));
      const after = plan.objects
        .filter((o) => o.type !== "table" && !(o.type === "index" && hoisted.has(o.name)))
        .map((o) => (o.type === "trigger" ? { ...o, sql: unguardTrigger(o.sql).sql } : o));
      const id = crypto.randomUUID();
      this.leases.set(id, { snapshot: plan.id, usedAt: Date.now() });
      this.armTimer();
      return {
        id,
        lsn: plan.lsn,
        rows: counts.reduce((a, b) => a + b, 0),
        tables,
        sequence: plan.sequence,
        after,
      };
    } catch (error) {
      source.releaseIf(plan.id);
      throw error;
    }
  }

  page(cluster: string, id: string, index: number, after: number): ExportPage {
    this.core.ensureCluster(cluster);
    const lease = this.lease(id);
    lease.usedAt = Date.now();
    const chunk = this.core.snapshots.chunk(lease.snapshot, index, after, EXPORT_PAGE_BYTES);
    return { images: chunk.rows.map((r) => r.img), last: chunk.last };
  }

  end(cluster: string, id: string): void {
    this.core.ensureCluster(cluster);
    const lease = this.leases.get(id);
    if (lease === undefined) return;
    this.leases.delete(id);
    this.core.snapshots.releaseIf(lease.snapshot);
  }

  private lease(id: string): Lease {
    const lease = this.leases.get(id);
    if (lease === undefined) {
      throw new ApiError(
        "UNAVAILABLE",
        `export ${id} is over: it ended, sat idle for ${EXPORT_IDLE_MS / 1000} s, or the master restarted; export again`,
      );
    }
    return lease;
  }

  private expireIdle(now: number): void {
    for (const [id, lease] of this.leases) {
      if (now - lease.usedAt < EXPORT_IDLE_MS) continue;
      this.leases.delete(id);
      this.core.snapshots.releaseIf(lease.snapshot);
    }
  }

  /** Looks again once the oldest lease could have run out; only cleanup waits on it. */
  private armTimer(): void {
    if (this.timer !== null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.expireIdle(Date.now());
      if (this.leases.size > 0) this.armTimer();
    }, EXPORT_IDLE_MS);
  }
}
