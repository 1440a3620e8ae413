/**
 * Streaming a snapshot to one replica over its relay's stub (so it keeps
 * E-order with the relay's heartbeats), in chunks bounded by bytes, checking
 * between chunks whether a heartbeat is due. A stream that fails keeps the
 * snapshot (SnapshotSource.park) and the replica's staging: the relay backs
 * off, and the next attempt resumes from what the replica staged.
 */
import type { NodeStore } from "../node-store";
import type { Relay } from "./relay";
import type { ReplicaSet } from "./replica-set";
import type { SnapshotSource } from "./snapshot-source";

/** Bytes of row images in one `rows` message. */
export const SNAPSHOT_CHUNK_BYTES = 1024 * 1024;

export interface SnapshotProgress {
  id: string | null;
  lsn: number | null;
  rowsSent: number;
  failures: number;
  lastError: string | null;
}

export function emptyProgress(): SnapshotProgress {
  return { id: null, lsn: null, rowsSent: 0, failures: 0, lastError: null };
}

export async function streamSnapshot(
  source: SnapshotSource,
  relay: Relay,
  progress: SnapshotProgress,
  store: NodeStore,
  term: number,
  onInstalled: (lsn: number) => void,
): Promise<void> {
  const plan = source.begin();
  progress.id = plan.id;
  progress.lsn = plan.lsn;
  try {
    const replica = relay.replica;
    const begun = await replica.installSnapshot({
      phase: "begin",
      id: plan.id,
      lsn: plan.lsn,
      tables: plan.tables.length,
      term,
    });
    for (const [index] of plan.tables.entries()) {
      let after = begun.staged?.[index] ?? 0;
      for (;;) {
        const chunk = source.chunk(plan.id, index, after, SNAPSHOT_CHUNK_BYTES);
        if (chunk.rows.length === 0) break;
        await replica.installSnapshot({
          phase: "rows",
          id: plan.id,
          table: index,
          rows: chunk.rows,
        });
        progress.rowsSent += chunk.rows.length;
        after = chunk.last;
        relay.heartbeatIfDue();
      }
    }
    // The saved results of commits the snapshot holds: a promoted replica
    // answers their retries too (later ones ride in the records).
    for (let after: string | null = null; ; ) {
      const page = store.readResults(after, SNAPSHOT_CHUNK_BYTES, plan.lsn);
      if (page.results.length > 0) {
        await replica.installSnapshot({ phase: "results", id: plan.id, results: page.results });
      }
      if (page.next === null) break;
      after = page.next;
      relay.heartbeatIfDue();
    }
    // Installing says the replica holds everything through plan.lsn: the log
    // must still hold every record after it.
    source.check(plan.id);
    await replica.installSnapshot({
      phase: "end",
      id: plan.id,
      lsn: plan.lsn,
      logEnd: plan.logEnd,
      lastTerm: plan.lastTerm,
      term,
      tables: plan.tables.map((t) => ({ name: t.name })),
      objects: plan.objects,
      sequence: plan.sequence,
      fts5Settings: plan.fts5Settings,
    });
    source.release();
    progress.lastError = null;
    relay.finishSnapshot(plan.lsn);
    onInstalled(plan.lsn);
  } catch (error) {
    source.park();
    progress.failures++;
    progress.lastError = error instanceof Error ? error.message : String(error);
    relay.abortSnapshot(error);
  }
}

export interface SnapshotStreamsHost {
  ctx: DurableObjectState;
  source: SnapshotSource;
  replicas: ReplicaSet;
  store: NodeStore;
  /** Each replica's snapshot streams: the current one and failures since the master started. */
  progress: Map<string, SnapshotProgress>;
  term(): number;
  failed(id: string): void;
}

/** A replica rebuilt from a snapshot: marked incoherent, its relay held, the stream run. */
export class SnapshotStreams {
  constructor(private readonly host: SnapshotStreamsHost) {}

  request(id: string): void {
    const entry = this.host.replicas.get(id);
    if (entry === undefined || entry.relay.snapshotting) return;
    this.host.replicas.markIncoherent(entry, "rebuild");
    entry.relay.startSnapshot();
    this.host.ctx.waitUntil(this.stream(id));
  }

  private async stream(id: string): Promise<void> {
    const { replicas, progress: all, source, store } = this.host;
    const entry = replicas.get(id);
    if (entry === undefined) return;
    let progress = all.get(id);
    if (progress === undefined) {
      progress = emptyProgress();
      all.set(id, progress);
    }
    const failures = progress.failures;
    await streamSnapshot(source, entry.relay, progress, store, this.host.term(), () => {
      replicas.onAck(id, 0, false, 0);
    });
    if (progress.failures > failures) this.host.failed(id);
  }
}
