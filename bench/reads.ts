/**
 * The price of linearizable strong reads: their latency beside `bookmark` and
 * `any` reads, on the master and on the replicas, on an idle cluster and
 * under writing clients, in one run (4 replicas, in-runtime driver: readers
 * with one read in flight each, each read a point lookup; a read a replica
 * cannot serve goes to the master, as the front door sends it).
 *
 *   npm run bench:reads -- [--writers 0,64] [--readers 8] [--seconds 4] [--warmup 1]
 *                          [--idle-pause 2]
 *
 * On the idle cluster each reader pauses --idle-pause ms after each read: the
 * local runtime runs every object on one event loop, and readers that never
 * pause keep it from idling, so no timer fires, the master sends no heartbeat
 * and replicas lose their leases (deployed, each object has its own). Under
 * load the writers keep the loop busy anyway; there batches carry the leases
 * and readers do not pause (a timer would not fire until the load ends).
 *
 * Prints a markdown table, one row per load, target and consistency.
 */
import { parseArgs } from "node:util";
import type { ReadRunResult } from "./read-types.ts";
import { ClusterClient } from "./suite/cluster.ts";
import { nextTag } from "./suite/measure.ts";
import { startBenchServer } from "./suite/server.ts";

const { values } = parseArgs({
  options: {
    writers: { type: "string", default: "0,64" },
    readers: { type: "string", default: "8" },
    seconds: { type: "string", default: "4" },
    warmup: { type: "string", default: "1" },
    "idle-pause": { type: "string", default: "2" },
  },
});
const writerCounts = values.writers.split(",").map(Number);
const readers = Number(values.readers);
const seconds = Number(values.seconds);
const warmup = Number(values.warmup);
const idlePause = Number(values["idle-pause"]);
for (const n of [readers, seconds, warmup, ...writerCounts]) {
  if (!Number.isFinite(n) || n < 0) throw new Error(`not a count: ${n}`);
}

interface BarrierStatus {
  master: { strongReads: { waited: number; timedOut: number } };
  replicas: { calls: number; commitPointNotices: number }[];
}

const server = await startBenchServer();
try {
  const header = [
    "| load | served by | consistency | reads/s | p50 ms | p99 ms | passed to the master |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ];
  const rows: string[] = [];
  const notes: string[] = [];
  for (const writers of writerCounts) {
    const cluster = new ClusterClient(server.url, `reads-${writers}-${Date.now().toString(36)}`);
    const lagging = await cluster.waitCoherent(30_000);
    if (lagging.length > 0) throw new Error(`not coherent: ${lagging.join(", ")}`);
    const before = (await cluster.status()) as unknown as BarrierStatus;
    process.stderr.write(`${writers} writers, ${readers} readers per cell ...\n`);
    const response = await fetch(`${server.url}/bench/reads`, {
      method: "POST",
      body: JSON.stringify({
        cluster: cluster.name,
        writers,
        readers,
        secondsPerCell: seconds,
        warmupSeconds: warmup,
        pauseMs: writers === 0 ? idlePause : 0,
        tag: nextTag(),
      }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`/bench/reads: ${response.status} ${text.slice(0, 300)}`);
    const result = JSON.parse(text) as ReadRunResult;
    const after = (await cluster.status()) as unknown as BarrierStatus;
    const load =
      writers === 0 ? "idle" : `${writers} writers (${result.insertsPerSecond} inserts/s)`;
    for (const cell of result.cells) {
      if (cell.errors > 0) throw new Error(`${cell.errors} errors: ${cell.firstError}`);
      const passed = cell.target === "master" ? "–" : `${cell.redirected} of ${cell.reads}`;
      if (cell.firstRedirect !== null)
        notes.push(
          `${load}, ${cell.target} ${cell.consistency}: first redirect: ${cell.firstRedirect}`,
        );
      rows.push(
        `| ${load} | ${cell.target} | ${cell.consistency} | ${cell.readsPerSecond} | ${cell.p50Ms} | ${cell.p99Ms} | ${passed} |`,
      );
    }
    const sum = (s: BarrierStatus, k: "calls" | "commitPointNotices") =>
      s.replicas.reduce((acc, r) => acc + r[k], 0);
    const waited = after.master.strongReads.waited - before.master.strongReads.waited;
    const timedOut = after.master.strongReads.timedOut - before.master.strongReads.timedOut;
    notes.push(
      `${load}: strong reads on the master that waited for the commit point ${waited} (gave up ${timedOut}); append calls to replicas ${sum(after, "calls") - sum(before, "calls")}, of which commit point notices ${sum(after, "commitPointNotices") - sum(before, "commitPointNotices")}`,
    );
  }
  process.stdout.write(`\n${[...header, ...rows].join("\n")}\n\n${notes.join("\n")}\n`);
} finally {
  await server.stop();
}
