/**
 * Replica catch-up: one replica cut off for a while under HTTP load, then
 * reconnected; how far behind it was and how long until it is coherent again.
 * Over HTTP, because under the in-runtime driver's load the Worker's own calls
 * to the master, status among them, wait until the load ends on the local
 * runtime.
 */
import { type ClusterClient, sleep } from "./cluster.ts";
import { startHttpLoad } from "./http-driver.ts";

export interface CatchupOptions {
  url: string;
  cluster: ClusterClient;
  clients: number;
  /** Load before the replica is cut off. */
  loadSeconds: number;
  downSeconds: number;
  /** logput_window_bytes for this run; null leaves the cluster's setting. */
  windowBytes: number | null;
  replica: string;
  tag: string;
  log: (line: string) => void;
}

export interface CatchupRun {
  windowBytes: number;
  downSeconds: number;
  lsnAtRestart: number;
  behindAtRestartRecords: number;
  behindAtRestartBytes: number;
  /** Until it had acked everything the master had written when it was reconnected. */
  caughtUpAfterSeconds: number | null;
  /** Until it was coherent again (also waits out coherency_rejoin_penalty_ms from its mark). */
  coherentAfterSeconds: number | null;
  insertsPerSecondDuringCatchup: number | null;
  /** Log batches the replica pulled while catching up (0: the relay pushed it back). */
  pullBatches: number;
  snapshots: number;
  failedRequests: number;
}

export async function measureCatchup(o: CatchupOptions): Promise<CatchupRun> {
  if (o.windowBytes !== null) await o.cluster.patchTunables({ logput_window_bytes: o.windowBytes });
  const tunables = await o.cluster.tunables();
  const windowBytes = Number(tunables.logput_window_bytes?.value);
  const replica = async () => {
    const s = await o.cluster.status();
    const r = s.replicas.find((x) => x.id === o.replica);
    if (r === undefined) throw new Error(`no ${o.replica} in ${o.cluster.name}`);
    return { s, r };
  };
  const start = await replica();
  const load = startHttpLoad(o.url, o.cluster.name, o.clients, o.tag);
  await sleep(o.loadSeconds * 1000);
  await o.cluster.setDisconnected(o.replica, true);
  const downAt = Date.now();
  while (Date.now() - downAt < o.downSeconds * 1000) {
    await sleep(Math.min(5_000, o.downSeconds * 1000 - (Date.now() - downAt)));
    const { s } = await replica();
    o.log(
      `  ${o.replica} down ${Math.round((Date.now() - downAt) / 1000)} s, master LSN ${s.master.lsn}`,
    );
  }
  const before = await replica();
  await o.cluster.setDisconnected(o.replica, false);
  const startedAt = Date.now();
  let caughtUpAfter: number | null = null;
  let coherentAfter: number | null = null;
  let last = before;
  while (Date.now() - startedAt < 600_000) {
    await sleep(100);
    last = await replica();
    if (caughtUpAfter === null && last.r.ackedLsn >= before.s.master.lsn) {
      caughtUpAfter = (Date.now() - startedAt) / 1000;
    }
    if (last.r.state === "coherent") {
      coherentAfter = (Date.now() - startedAt) / 1000;
      break;
    }
  }
  const counts = await load.stop();
  return {
    windowBytes,
    downSeconds: o.downSeconds,
    lsnAtRestart: before.s.master.lsn,
    behindAtRestartRecords: before.s.master.lsn - before.r.ackedLsn,
    behindAtRestartBytes: before.r.bytesBehind,
    caughtUpAfterSeconds: caughtUpAfter,
    coherentAfterSeconds: coherentAfter,
    insertsPerSecondDuringCatchup:
      coherentAfter === null || coherentAfter === 0
        ? null
        : Math.round((last.s.master.lsn - before.s.master.lsn) / coherentAfter),
    pullBatches: last.r.pullBatches - start.r.pullBatches,
    snapshots: last.r.snapshots - start.r.snapshots,
    failedRequests: counts.errors,
  };
}
