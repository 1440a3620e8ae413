/**
 * Read latency side by side, inside workerd (the BenchDriver runs it): readers
 * with one read in flight each, pinned to the master or spread over the
 * replicas, for each consistency, one cell after another, while the writers
 * insert. A read a replica redirects goes to the master, as the front door
 * sends it; its latency includes both calls. Each read is a point lookup in a
 * seeded table, so what is measured is the routing, the lease and the read
 * barrier, not SQLite.
 */
import type { Result } from "../core/errors";
import type {
  Consistency,
  QueryRequest,
  QueryResponse,
  ReplicaQueryOutcome,
} from "../core/protocol";
import { masterRecord, memberStub } from "../workers/cluster";
import type { ReadCell, ReadRunRequest, ReadTarget } from "./read-types";
import { percentile } from "./stats";

export const READ_TABLE = "bench_reads";
const READ_ROWS = 1000;
const CELLS: { target: ReadTarget; consistency: Consistency }[] = [
  { target: "master", consistency: "strong" },
  { target: "replicas", consistency: "strong" },
  { target: "master", consistency: "bookmark" },
  { target: "replicas", consistency: "bookmark" },
  { target: "master", consistency: "any" },
  { target: "replicas", consistency: "any" },
];

export class ReadLoad {
  /** The highest LSN acknowledged to a writer: what a bookmark read asks for. */
  private bookmarkLsn = 0;

  constructor(
    private readonly env: Env,
    private readonly cluster: string,
  ) {}

  private async master() {
    const record = await masterRecord(this.env, this.cluster);
    return memberStub(this.env, this.cluster, record.master);
  }

  private replica(id: string) {
    return memberStub(this.env, this.cluster, id);
  }

  /** A writer's insert was acknowledged at `lsn`. */
  acked(lsn: number): void {
    if (lsn > this.bookmarkLsn) this.bookmarkLsn = lsn;
  }

  /** The table the reads look up, filled in one write (its LSN is the first bookmark). */
  async seed(): Promise<void> {
    const values = Array.from({ length: READ_ROWS }, (_, i) => `(${i + 1}, 'v${i + 1}')`);
    const done = (await (
      await this.master()
    ).exec({
      cluster: this.cluster,
      kind: "exec",
      statements: [
        {
          sql: `CREATE TABLE IF NOT EXISTS ${READ_TABLE} (id INTEGER PRIMARY KEY, v TEXT)`,
          params: [],
        },
        {
          sql: `INSERT OR REPLACE INTO ${READ_TABLE} (id, v) VALUES ${values.join(", ")}`,
          params: [],
        },
      ],
    })) as Result<{ lsn: number }>;
    if (!done.ok) throw new Error(done.error.message);
    this.acked(done.value.lsn);
  }

  /** Every cell in turn; `stopWriters` is called once the last one is measured. */
  async cells(request: ReadRunRequest): Promise<ReadCell[]> {
    const replicaIds = (await (await this.master()).replicaIds(this.cluster)) as string[];
    const out: ReadCell[] = [];
    for (const cell of CELLS) out.push(await this.measure(request, cell, replicaIds));
    return out;
  }

  private async measure(
    request: ReadRunRequest,
    cell: { target: ReadTarget; consistency: Consistency },
    replicaIds: string[],
  ): Promise<ReadCell> {
    const latencies: number[] = [];
    const errors: string[] = [];
    let redirected = 0;
    let firstRedirect: string | null = null;
    const startedAt = Date.now();
    const warmupUntil = startedAt + request.warmupSeconds * 1000;
    const until = warmupUntil + request.secondsPerCell * 1000;
    const reader = async (index: number) => {
      const master = await this.master();
      const replicas = replicaIds.map((id) => ({ id, stub: this.replica(id) }));
      for (let n = index; Date.now() < until; n++) {
        const query: QueryRequest = {
          cluster: this.cluster,
          sql: `SELECT v FROM ${READ_TABLE} WHERE id = ?`,
          params: [(n % READ_ROWS) + 1],
          consistency: cell.consistency,
          minLsn: cell.consistency === "bookmark" ? this.bookmarkLsn : 0,
        };
        const measuring = Date.now() >= warmupUntil;
        const started = performance.now();
        try {
          let served = false;
          const replica = replicas[n % Math.max(1, replicas.length)];
          if (cell.target === "replicas" && replica !== undefined) {
            const outcome = (await replica.stub.replicaQuery(
              query,
              replica.id,
            )) as ReplicaQueryOutcome;
            if (outcome.kind === "error") throw new Error(outcome.error.message);
            served = outcome.kind === "rows";
            if (outcome.kind === "redirect" && measuring) {
              redirected++;
              firstRedirect ??= outcome.reason;
            }
          }
          if (!served) {
            const answer = (await master.query(query)) as Result<QueryResponse>;
            if (!answer.ok) throw new Error(answer.error.message);
          }
          if (measuring) latencies.push(performance.now() - started);
        } catch (error) {
          if (measuring) errors.push(error instanceof Error ? error.message : String(error));
        }
        if (request.pauseMs > 0) await new Promise((r) => setTimeout(r, request.pauseMs));
      }
    };
    await Promise.all(Array.from({ length: request.readers }, (_, i) => reader(i)));
    latencies.sort((a, b) => a - b);
    const seconds = (Date.now() - warmupUntil) / 1000;
    return {
      ...cell,
      reads: latencies.length,
      readsPerSecond: Math.round(latencies.length / seconds),
      p50Ms: Math.round(percentile(latencies, 50) * 10) / 10,
      p99Ms: Math.round(percentile(latencies, 99) * 10) / 10,
      redirected,
      firstRedirect,
      errors: errors.length,
      firstError: errors[0] ?? null,
    };
  }
}
