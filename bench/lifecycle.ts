/**
 * Replica lifecycle measurements (4 replicas, 64 HTTP clients through the front door;
 * over HTTP, because under the in-runtime driver's load the Worker's own calls to
 * the master, status among them, wait until the load ends on the local runtime):
 *   catchup:   a replica stopped for --down seconds under full load, then
 *              restarted: seconds until it is coherent again, with
 *              logput_window_bytes at its default and at 0 (off), side by side.
 *              (`npm run bench` runs this as seed experiment 7.)
 *   retention: --inserts inserts with one replica down for most of them: the log
 *              table's rows and bytes then, and after the replica caught up.
 *
 *   node bench/lifecycle.ts [--experiment catchup|retention|all] [--down 60] [--inserts 100000]
 *                           [--window BYTES (logput_window_bytes for the first catch-up run)]
 */
import { parseArgs } from "node:util";
import { measureCatchup } from "./suite/catchup.ts";
import { ClusterClient, sleep } from "./suite/cluster.ts";
import { startHttpLoad } from "./suite/http-driver.ts";
import { nextTag } from "./suite/measure.ts";
import { startBenchServer } from "./suite/server.ts";

const { values } = parseArgs({
  options: {
    experiment: { type: "string", default: "all" },
    down: { type: "string", default: "60" },
    inserts: { type: "string", default: "100000" },
    clients: { type: "string", default: "64" },
    window: { type: "string" },
  },
});
const downSeconds = Number(values.down);
const insertsWanted = Number(values.inserts);
const clients = Number(values.clients);

const server = await startBenchServer();
const log = (text: string) => process.stderr.write(`${text}\n`);

async function faultCluster(prefix: string): Promise<ClusterClient> {
  const cluster = new ClusterClient(server.url, `${prefix}-${Date.now().toString(36)}`);
  await cluster.patchTunables({ debug_fault_injection: true });
  return cluster;
}

async function catchup(windowBytes: number | null): Promise<Record<string, unknown>> {
  const cluster = await faultCluster("catchup");
  const label =
    windowBytes === null ? "logput_window_bytes default" : `logput_window_bytes ${windowBytes}`;
  log(`catchup, ${label}: load for 10 s, replica-2 down ${downSeconds} s`);
  const result = await measureCatchup({
    url: server.url,
    cluster,
    clients,
    loadSeconds: 10,
    downSeconds,
    windowBytes,
    replica: "replica-2",
    tag: nextTag(),
    log,
  });
  log(`  ${JSON.stringify(result)}`);
  return { setting: label, ...result };
}

async function retention(): Promise<Record<string, unknown>> {
  const cluster = await faultCluster("retention");
  const tunables = await cluster.tunables();
  const replica = async () => {
    const s = await cluster.status();
    const r = s.replicas.find((x) => x.id === "replica-2");
    if (r === undefined) throw new Error("no replica-2");
    return { s, r };
  };
  log(`retention: ${insertsWanted} inserts, replica-2 down after the first 5%`);
  const load = startHttpLoad(server.url, cluster.name, clients, nextTag());
  let stopped = false;
  for (;;) {
    await sleep(2_000);
    const { s } = await replica();
    if (!stopped && s.master.lsn >= insertsWanted * 0.05) {
      await cluster.setDisconnected("replica-2", true);
      stopped = true;
    }
    log(
      `  master LSN ${s.master.lsn}, log rows ${s.master.logRows}, log bytes ${s.master.logBytes}`,
    );
    if (s.master.lsn >= insertsWanted) break;
  }
  await load.stop();
  await sleep(3_000); // one truncation step more
  const down = await replica();
  await cluster.setDisconnected("replica-2", false);
  const startedAt = Date.now();
  const retain = Number(tunables.log_retain_records?.value ?? 0);
  let after = down;
  for (;;) {
    await sleep(500);
    after = await replica();
    if (after.r.state === "coherent" && after.s.master.logRows <= retain + 1) break;
    if (Date.now() - startedAt > 600_000) break;
  }
  const result = {
    inserts: down.s.master.lsn,
    logRetainRecords: tunables.log_retain_records?.value,
    logMaxRecords: tunables.log_max_records?.value,
    whileDown: {
      logRows: down.s.master.logRows,
      logBytes: down.s.master.logBytes,
      truncatedThrough: down.s.master.truncatedThrough,
    },
    afterCatchUp: {
      seconds: (Date.now() - startedAt) / 1000,
      logRows: after.s.master.logRows,
      logBytes: after.s.master.logBytes,
      replicaState: after.r.state,
      snapshots: after.r.snapshots,
      pullBatches: after.r.pullBatches,
    },
  };
  log(`  ${JSON.stringify(result)}`);
  return result;
}

const results: Record<string, unknown> = {};
try {
  if (values.experiment === "catchup" || values.experiment === "all") {
    results.catchupWindow = await catchup(
      values.window === undefined ? null : Number(values.window),
    );
    results.catchupNoWindow = await catchup(0);
  }
  if (values.experiment === "retention" || values.experiment === "all") {
    results.retention = await retention();
  }
} finally {
  await server.stop();
}
console.log(JSON.stringify(results, null, 2));
