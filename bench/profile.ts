/**
 * Where the CPU goes under the insert load: a V8 CPU profile of the Worker's
 * isolate (every Durable Object of the cluster and the in-runtime driver run
 * on its one thread locally) over one run of single-row inserts, summarized by
 * function and module (bench/suite/cpu-profile.ts). Only the run's measured
 * seconds count: its tables' creation, the replicas' apply of it and the drop
 * fall outside them. `--root` profiles another checkout (a baseline worktree)
 * the same way; `--tunables` sets the cluster's before the load (an ack delay).
 *
 *   npm run bench:profile -- [--clients 64] [--replicas 4] [--seconds 8] [--root .]
 *                            [--tunables '{"debug_ack_delay_ms":100}'] [--save profile.json]
 */
import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { freePort } from "../test/e2e/dev-server.ts";
import { DosqliteClient } from "../client/index.ts";
import { type ProfileRow, summarize } from "./suite/cpu-profile.ts";
import { connectProfiler } from "./suite/inspector.ts";
import { ClusterClient } from "./suite/cluster.ts";
import { startBenchServer } from "./suite/server.ts";

const { values } = parseArgs({
  options: {
    clients: { type: "string", default: "64" },
    replicas: { type: "string", default: "4" },
    tunables: { type: "string", default: "{}" },
    seconds: { type: "string", default: "8" },
    root: { type: "string", default: "." },
    save: { type: "string" },
    limit: { type: "string", default: "30" },
  },
});
const clients = Number(values.clients);
const seconds = Number(values.seconds);
if (!(clients > 0) || !(seconds > 0)) throw new Error("--clients and --seconds must be positive");

async function run(url: string, cluster: string, tag: string, runSeconds: number) {
  // A second of warm-up: the replicas apply the run's CREATE TABLEs then, outside the window.
  const response = await fetch(`${url}/bench/run`, {
    method: "POST",
    body: JSON.stringify({ cluster, clients, seconds: runSeconds, warmupSeconds: 1, tag }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`bench run: ${response.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as {
    inserts: number;
    insertsPerSecond: number;
    p50Ms: number;
    measuredFrom: number;
    measuredTo: number;
  };
}

/** Append calls the master made to all its replicas so far (batches, heartbeats, ack fetches). */
async function appendCalls(client: DosqliteClient): Promise<number> {
  const status = await client.admin.status();
  return status.replicas.reduce((sum, replica) => sum + replica.calls, 0);
}

const inspectorPort = await freePort();
const server = await startBenchServer(values.root, undefined, inspectorPort);
try {
  const cluster = `profile-${Date.now().toString(36)}`;
  const admin = new DosqliteClient({ url: server.url, cluster, adminToken: "dev-admin-token" });
  await admin.admin.patchTunables({ async_dist_commit: true, ...JSON.parse(values.tunables) });
  const members = new ClusterClient(server.url, cluster);
  await members.setReplicaCount(Number(values.replicas));
  const lagging = await members.waitCoherent(30_000);
  if (lagging.length > 0) throw new Error(`${lagging.join(", ")} not coherent`);
  // Warm-up: compiled code, prepared statements, the replicas' first batches.
  await run(server.url, cluster, "warm", 2);
  const profiler = await connectProfiler(inspectorPort);
  const callsBefore = await appendCalls(admin);
  await profiler.start();
  const profiledFrom = Date.now();
  const result = await run(server.url, cluster, "profiled", seconds);
  const profile = await profiler.stop();
  const calls = (await appendCalls(admin)) - callsBefore;
  profiler.close();
  const window = {
    fromUs: (result.measuredFrom - profiledFrom) * 1000,
    toUs: (result.measuredTo - profiledFrom) * 1000,
  };
  if (values.save !== undefined) {
    writeFileSync(values.save, JSON.stringify({ ...profile, window }));
    // The bundle the profile's line numbers refer to, beside it.
    writeFileSync(`${values.save}.bundle.js`, readFileSync(server.bundle));
  }
  // Only the measured seconds count: the run's table set-up and drop fall outside them.
  const summary = summarize(profile, readFileSync(server.bundle, "utf8"), {
    limit: Number(values.limit),
    window,
  });
  const perInsertUs = (share: number) => (share * summary.totalMs * 1000) / result.inserts;
  const table = (title: string, rows: ProfileRow[]) => {
    console.log(`\n| ${title} | share | µs per insert |\n| --- | ---: | ---: |`);
    for (const row of rows) {
      const name = row.name.replaceAll("|", "\\|");
      console.log(
        `| ${name} | ${(row.share * 100).toFixed(1)}% | ${perInsertUs(row.share).toFixed(1)} |`,
      );
    }
  };
  console.log(
    `${result.inserts} inserts in ${seconds} s (${result.insertsPerSecond}/s, p50 ${result.p50Ms} ms), ` +
      `${clients} clients; ${(summary.totalMs / 1000).toFixed(2)} s sampled, ` +
      `idle ${(summary.idle * 100).toFixed(1)}% (the measured window only, set-up left out); ` +
      `${(calls / result.inserts).toFixed(2)} append calls per insert over all replicas`,
  );
  table("module (self)", summary.modules);
  table("function (self)", summary.self);
  table("function (inclusive)", summary.inclusive);
} finally {
  await server.stop();
}
