/**
 * The clusters the throughput experiments share, one per replica count, made
 * once per benchmark run through the membership API. Reusing them (with fresh
 * tables per run) keeps the number of live clusters small: every live cluster
 * heartbeats its replicas, and idle clusters left behind by earlier points
 * would load the machine the next points are measured on.
 */
import { ClusterClient, type TunablePatch } from "./cluster.ts";

/** The tunables the experiments change; each point resets the others to their defaults. */
export const BENCH_TUNABLES = [
  "async_dist_commit",
  "async_dist_commit_max_outstanding",
  "writer_concurrency",
  "debug_ack_delay_ms",
  "debug_apply_delay_ms",
  "logput_window_bytes",
] as const;

export class Topologies {
  private readonly clusters = new Map<number, Promise<ClusterClient>>();
  private defaults: TunablePatch | null = null;

  readonly url: string;
  readonly runId: string;
  private readonly log: (line: string) => void;

  constructor(url: string, runId: string, log: (line: string) => void) {
    this.url = url;
    this.runId = runId;
    this.log = log;
  }

  /** A cluster with `replicas` replicas, all coherent. */
  get(replicas: number): Promise<ClusterClient> {
    let cluster = this.clusters.get(replicas);
    if (cluster === undefined) {
      cluster = this.make(replicas);
      this.clusters.set(replicas, cluster);
    }
    return cluster;
  }

  /** A cluster of its own for one experiment (fault experiments disturb it). */
  async fresh(suffix: string, patch: TunablePatch = {}): Promise<ClusterClient> {
    const cluster = new ClusterClient(this.url, `b${this.runId}-${suffix}`);
    await cluster.patchTunables(patch);
    const lagging = await cluster.waitCoherent(15_000);
    if (lagging.length > 0) throw new Error(`${cluster.name}: ${lagging.join(", ")} not coherent`);
    return cluster;
  }

  /** The defaults of BENCH_TUNABLES, read from the cluster (the single source). */
  async baseTunables(): Promise<TunablePatch> {
    if (this.defaults !== null) return this.defaults;
    const cluster = await this.get(4);
    const all = await cluster.tunables();
    const base: TunablePatch = {};
    for (const name of BENCH_TUNABLES) {
      const t = all[name];
      if (t === undefined) throw new Error(`the cluster has no tunable ${name}`);
      base[name] = t.default;
    }
    this.defaults = base;
    return base;
  }

  private async make(replicas: number): Promise<ClusterClient> {
    const started = Date.now();
    const cluster = new ClusterClient(this.url, `b${this.runId}-r${replicas}`);
    const all = await cluster.tunables();
    const penalty = all.coherency_rejoin_penalty_ms?.default ?? 10_000;
    // New replicas join incoherent; without the rejoin penalty they join as soon as they ack.
    await cluster.patchTunables({ coherency_rejoin_penalty_ms: 0 });
    await cluster.setReplicaCount(replicas);
    const lagging = await cluster.waitCoherent(30_000);
    if (lagging.length > 0) throw new Error(`${cluster.name}: ${lagging.join(", ")} not coherent`);
    await cluster.patchTunables({ coherency_rejoin_penalty_ms: penalty });
    this.log(
      `cluster ${cluster.name}: ${replicas} replicas ready in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    return cluster;
  }
}
