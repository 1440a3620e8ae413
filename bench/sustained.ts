/**
 * Sustained load: one long in-runtime run per replica count, alternating, with
 * inserts/s second by second, to see whether throughput holds over a run (the
 * suite's points measure 4-5 s after an idle pause).
 *
 *   npm run bench:sustained -- [--replicas 0,1,4] [--clients 64] [--seconds 20]
 *                              [--repeats 1] [--span 5]
 *
 * Prints each run's series and the mean of its last `span` seconds against its
 * first `span` (warm-up included: the series starts when the load does).
 */
import { parseArgs } from "node:util";
import { ClusterClient, sleep } from "./suite/cluster.ts";
import { nextTag } from "./suite/measure.ts";
import { runInRuntimeLoad } from "./suite/runtime-driver.ts";
import { startBenchServer } from "./suite/server.ts";
import { sustainedShare } from "./suite/stats.ts";

const { values } = parseArgs({
  options: {
    replicas: { type: "string", default: "0,4" },
    clients: { type: "string", default: "64" },
    seconds: { type: "string", default: "20" },
    repeats: { type: "string", default: "1" },
    span: { type: "string", default: "5" },
  },
});
const replicaCounts = values.replicas.split(",").map(Number);
const clients = Number(values.clients);
const seconds = Number(values.seconds);
const span = Number(values.span);
const repeats = Number(values.repeats);
for (const n of [clients, seconds, span, repeats, ...replicaCounts]) {
  if (!Number.isInteger(n) || n < 0) throw new Error(`not a count: ${n}`);
}
if (seconds < 2 * span + 1) throw new Error(`--seconds must be at least ${2 * span + 1}`);

const server = await startBenchServer();
try {
  const clusters = new Map<number, ClusterClient>();
  for (const count of replicaCounts) {
    const cluster = new ClusterClient(server.url, `sustained-${count}-${Date.now().toString(36)}`);
    await cluster.setReplicaCount(count);
    clusters.set(count, cluster);
  }
  const rows: string[] = [];
  for (let repeat = 0; repeat < repeats; repeat++) {
    for (const count of replicaCounts) {
      const cluster = clusters.get(count) as ClusterClient;
      process.stderr.write(`${count} replicas, ${clients} clients, ${seconds} s ...\n`);
      const result = await runInRuntimeLoad({
        url: server.url,
        cluster: cluster.name,
        clients,
        seconds,
        warmupSeconds: 0,
        tag: nextTag(),
      });
      if (result.errors > 0) throw new Error(`${result.errors} errors: ${result.firstError}`);
      const series = result.perSecond ?? [];
      const { first, last, share } = sustainedShare(series, span);
      const line = `${count} replicas: ${result.insertsPerSecond} inserts/s over ${seconds} s; first ${span} s ${Math.round(first)}/s, last ${span} s ${Math.round(last)}/s: ${Math.round(share * 100)}%`;
      process.stdout.write(`${line}\n  per second: ${series.join(" ")}\n`);
      rows.push(line);
      // An idle pause between runs, as between the suite's points.
      await sleep(1500);
    }
  }
  process.stdout.write(`\n${rows.join("\n")}\n`);
} finally {
  await server.stop();
}
