/**
 * The scaling measurements of `npm run bench:scale`: single-row inserts
 * against replica count, row size and database size, and how long a replica
 * takes to catch up from the log and to be rebuilt from a snapshot against the
 * data it lacks. Each point reports workerd's peak resident memory beside it.
 */
import { ClusterClient, sleep } from "./cluster.ts";
import { nextTag } from "./measure.ts";
import { peakRss } from "./processes.ts";
import { runInRuntimeLoad } from "./runtime-driver.ts";
import { median } from "./stats.ts";

export interface ScaleEnv {
  url: string;
  /** The dev server's process group (workerd's memory is read from it). */
  pgrp: number;
  seconds: number;
  warmupSeconds: number;
  repeats: number;
  log: (line: string) => void;
}

export interface LoadPoint {
  label: string;
  clients: number;
  runs: number[];
  insertsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** workerd's resident memory when the point's first run began, and its peak during that run. */
  startRssBytes: number;
  peakRssBytes: number;
}

export interface LoadSpec {
  label: string;
  cluster: ClusterClient;
  clients: number;
  rowBytes?: number;
}

/**
 * Runs every spec `repeats` times, spec after spec within each repeat, so the
 * machine's drift spreads over all of them; medians per spec.
 */
export async function measureLoads(env: ScaleEnv, specs: LoadSpec[]): Promise<LoadPoint[]> {
  const samples = specs.map(() => ({
    ips: [] as number[],
    p50: [] as number[],
    p99: [] as number[],
    startRss: 0,
    peakRss: 0,
  }));
  for (let round = 0; round < env.repeats; round++) {
    for (const [i, spec] of specs.entries()) {
      const {
        result: r,
        startBytes,
        peakBytes,
      } = await peakRss(env.pgrp, () =>
        runInRuntimeLoad({
          url: env.url,
          cluster: spec.cluster.name,
          clients: spec.clients,
          seconds: env.seconds,
          warmupSeconds: env.warmupSeconds,
          tag: nextTag(),
          ...(spec.rowBytes === undefined ? {} : { rowBytes: spec.rowBytes }),
        }),
      );
      if (r.errors > 0) throw new Error(`${spec.label}: ${r.errors} errors, ${r.firstError}`);
      const s = samples[i];
      if (s === undefined) continue;
      s.ips.push(r.insertsPerSecond);
      s.p50.push(r.p50Ms);
      s.p99.push(r.p99Ms);
      // The first round's: memory only grows during a run, so later rounds start higher.
      if (round === 0) {
        s.startRss = startBytes;
        s.peakRss = peakBytes;
      }
      env.log(
        `${spec.label}: ${r.insertsPerSecond} inserts/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, workerd ${mib(peakBytes)}`,
      );
      await sleep(500);
    }
  }
  return specs.map((spec, i) => {
    const s = samples[i] ?? { ips: [], p50: [], p99: [], startRss: 0, peakRss: 0 };
    return {
      label: spec.label,
      clients: spec.clients,
      runs: s.ips,
      insertsPerSecond: median(s.ips),
      p50Ms: median(s.p50),
      p99Ms: median(s.p99),
      startRssBytes: s.startRss,
      peakRssBytes: s.peakRss,
    };
  });
}

export const mib = (bytes: number) => `${(bytes / 1_048_576).toFixed(0)} MiB`;

/** A cluster of its own with `replicas` replicas, all coherent, rejoining without a penalty. */
export async function scaleCluster(
  url: string,
  name: string,
  replicas: number,
): Promise<ClusterClient> {
  const cluster = new ClusterClient(url, name);
  await cluster.patchTunables({ coherency_rejoin_penalty_ms: 0, debug_fault_injection: true });
  await cluster.setReplicaCount(replicas);
  const lagging = await cluster.waitCoherent(60_000);
  if (lagging.length > 0) throw new Error(`${name}: ${lagging.join(", ")} not coherent`);
  return cluster;
}

/**
 * Adds `rows` rows of about `rowBytes` bytes to table `name`, `perStatement`
 * to a commit. `random` fills them with randomblob(), which a replica could
 * not compute alike: those commits ship their rows, so the log carries the
 * data. Otherwise the rows are computed from their ids and the commits ship
 * as statements.
 */
export async function fillTable(
  cluster: ClusterClient,
  name: string,
  o: { rows: number; rowBytes: number; perStatement: number; random: boolean },
  log: (line: string) => void,
): Promise<{ seconds: number }> {
  await cluster.data.exec([
    { sql: `CREATE TABLE IF NOT EXISTS ${name} (id INTEGER PRIMARY KEY, v INTEGER, pad BLOB)` },
  ]);
  const pad = o.random ? `randomblob(${o.rowBytes})` : `printf('%0${o.rowBytes}d', x)`;
  const started = Date.now();
  let reported = started;
  const first = Number(
    (await cluster.query(`SELECT coalesce(max(id), 0) AS n FROM ${name}`))[0]?.n ?? 0,
  );
  for (let done = 0; done < o.rows; done += o.perStatement) {
    const from = first + done + 1;
    const through = first + Math.min(o.rows, done + o.perStatement);
    await cluster.data.exec([
      {
        sql: `INSERT INTO ${name} (id, v, pad) WITH RECURSIVE s(x) AS (SELECT ? UNION ALL SELECT x + 1 FROM s WHERE x < ?) SELECT x, x * 7, ${pad} FROM s`,
        params: [from, through],
      },
    ]);
    if (Date.now() - reported > 5_000) {
      reported = Date.now();
      log(`  ${name}: ${through - first} of ${o.rows} rows`);
    }
  }
  return { seconds: (Date.now() - started) / 1000 };
}

export interface RecoveryRun {
  /** The master's database file when the replica came back, and the log bytes it lacked. */
  databaseBytes: number;
  behindBytes: number;
  behindRecords: number;
  /** From the restart until it had acked everything the master had, then until coherent. */
  caughtUpSeconds: number | null;
  coherentSeconds: number | null;
  pullBatches: number;
  snapshots: number;
  startRssBytes: number;
  peakRssBytes: number;
}

/**
 * Waits until `replica` has acked through `targetLsn` and is coherent,
 * reading status every 20 ms; counts its pull batches and snapshots since
 * `before`.
 */
export async function waitRecovered(
  cluster: ClusterClient,
  replica: string,
  targetLsn: number,
  timeoutMs: number,
  /** When recovery began (the restart, or the call that added the replica). */
  started = Date.now(),
): Promise<{ caughtUp: number | null; coherent: number | null; pulls: number; snapshots: number }> {
  let caughtUp: number | null = null;
  let pulls = 0;
  let snapshots = 0;
  while (Date.now() - started < timeoutMs) {
    // Status is cheap: a fine poll, since a local recovery of 10 MB takes about 0.1 s.
    await sleep(20);
    const r = (await cluster.status()).replicas.find((x) => x.id === replica);
    if (r === undefined) continue;
    pulls = r.pullBatches;
    snapshots = r.snapshots;
    if (caughtUp === null && r.ackedLsn >= targetLsn) caughtUp = (Date.now() - started) / 1000;
    if (caughtUp !== null && r.state === "coherent") {
      return { caughtUp, coherent: (Date.now() - started) / 1000, pulls, snapshots };
    }
  }
  return { caughtUp, coherent: null, pulls, snapshots };
}
