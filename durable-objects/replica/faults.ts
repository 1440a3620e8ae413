/**
 * A replica's test-only faults (the master checks debug_fault_injection before
 * it calls any of them): stopped (answers nothing useful, kept in storage),
 * slow (extra sleep per message), crashing now or partway through its next
 * batch, and SQL run behind the log's back.
 */
import type { SqlNode } from "../sqlite/schema";

export class ReplicaFaults {
  stopped: boolean;
  /** Extra sleep per message on this replica only (a slow node). */
  delayMs = 0;
  /** Abort partway through the next batch. */
  crashMidBatch = false;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly node: SqlNode,
    private readonly dropLease: () => void,
  ) {
    this.stopped = ctx.storage.kv.get<string>("m:stopped") === "1";
  }

  async setStopped(stopped: boolean): Promise<void> {
    this.stopped = stopped;
    this.dropLease();
    this.ctx.storage.kv.put("m:stopped", stopped ? "1" : "0");
  }

  /** Crash now, or partway through the next batch it applies (inside that batch's transaction, which is then lost). */
  async crash(midBatch: boolean): Promise<void> {
    if (midBatch) this.crashMidBatch = true;
    else setTimeout(() => this.ctx.abort("crashed through the fault route"), 0);
  }

  /** Run SQL here outside the log, as a bug or an operator might. */
  async tamper(sql: string): Promise<void> {
    this.ctx.storage.transactionSync(() => {
      this.node.sql.exec(sql).toArray();
      // Keep the capture buffer empty, as a real change behind the log's back would.
      this.node.sql.exec("DELETE FROM _repl_changes").toArray();
    });
  }

  /** Slow by `ms` per message (0 ends it). */
  async setDelay(ms: number): Promise<void> {
    this.delayMs = ms;
  }
}
