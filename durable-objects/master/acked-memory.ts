/**
 * The highest LSN each replica acked, remembered across restarts of the
 * master, so that status and /metrics never report a replica's acked LSN lower
 * than an earlier incarnation did: a replica that is down when the master
 * restarts gives no answer to learn it from.
 *
 * One row for all replicas, written only when it changed, and only at the
 * moments that need it: before status or /metrics report the values (the
 * output gate holds that answer until the write is durable, so a value once
 * reported survives any restart), and once a second from the slow-replica job,
 * so one that was never reported is lost for at most a second. An idle cluster
 * writes nothing; a busy one at most one row a second plus one per report.
 *
 * Kept with the term it was written in: a master of another term (this node
 * promoted again later) has another log, and an LSN acked in an old one says
 * nothing about the new one.
 */
import type { MetaStore } from "./lease-memory";

const KEY = "acked_lsns";

interface Saved {
  term: number;
  lsns: Record<string, number>;
}

/** What the memory reads of each replica: its id and the highest LSN it acked. */
export interface AckedRelay {
  readonly id: string;
  highestAckedLsn: number;
}

export class AckedMemory {
  /** What was last written (or read), as written. */
  private written = "";
  /** What the storage held at start-up, for this term. */
  private loaded = new Map<string, number>();

  constructor(
    private readonly store: MetaStore,
    private readonly term: () => number,
    private readonly relays: () => AckedRelay[],
  ) {}

  /** At start-up: reads what this term's earlier incarnations of the master wrote. */
  load(): void {
    const text = this.store.getMeta(KEY);
    if (text === null) return;
    this.written = text;
    const saved = JSON.parse(text) as Saved;
    this.loaded = saved.term === this.term() ? new Map(Object.entries(saved.lsns)) : new Map();
  }

  /** A relay made at start-up starts from the highest LSN its replica acked before. */
  seed(relay: AckedRelay): void {
    relay.highestAckedLsn = Math.max(relay.highestAckedLsn, this.loaded.get(relay.id) ?? 0);
  }

  /** Writes the replicas' highest acked LSNs if they changed since the last write. */
  save(): void {
    const lsns: Record<string, number> = {};
    for (const r of this.relays()) lsns[r.id] = r.highestAckedLsn;
    const text = JSON.stringify({ term: this.term(), lsns } satisfies Saved);
    if (text === this.written) return;
    this.store.setMeta(KEY, text);
    this.written = text;
  }
}
