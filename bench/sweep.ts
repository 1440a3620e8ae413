/**
 * One tunable, several values, side by side: for each load point (clients and
 * debug_ack_delay_ms), each value in turn, repeated in rounds so machine drift
 * spreads over every value alike (4 replicas, in-runtime driver).
 *
 *   npm run bench:sweep -- --tunable relay_calls_in_flight --values 1,2,4
 *                          [--points 64:0,256:0,256:100] [--repeats 2]
 *                          [--seconds 4] [--warmup 1] [--replicas 4]
 *                          [--delay ack|link]
 *
 * Several tunables at once: `--tunable relay_calls_in_flight,relay_call_gap_ms
 * --values 1/0,4/3` sets each value's parts in that order. `--delay link`
 * puts a point's delay on the link (debug_link_delay_ms) instead of the acks.
 *
 * Prints one line per run (with the relays' calls per acked insert) and, per
 * point and value, the median inserts/s and p99.
 */
import { parseArgs } from "node:util";
import { ClusterClient, sleep } from "./suite/cluster.ts";
import { nextTag } from "./suite/measure.ts";
import { runInRuntimeLoad } from "./suite/runtime-driver.ts";
import { workerdCpuSeconds } from "./suite/processes.ts";
import { startBenchServer } from "./suite/server.ts";
import { median } from "./suite/stats.ts";

const { values } = parseArgs({
  options: {
    tunable: { type: "string" },
    values: { type: "string" },
    points: { type: "string", default: "64:0,256:0,256:100" },
    repeats: { type: "string", default: "2" },
    seconds: { type: "string", default: "4" },
    warmup: { type: "string", default: "1" },
    replicas: { type: "string", default: "4" },
    delay: { type: "string", default: "ack" },
  },
});
if (values.tunable === undefined || values.values === undefined) {
  throw new Error("usage: --tunable NAME --values V1,V2,... (see the comment at the top)");
}
const tunables = values.tunable.split(",");
const tunable = values.tunable;
const parse = (v: string) => (Number.isNaN(Number(v)) ? v : Number(v));
const settings = values.values.split(",").map((value) => {
  const parts = value.split("/");
  if (parts.length !== tunables.length) {
    throw new Error(`${value}: give ${tunables.length} parts (${tunables.join("/")})`);
  }
  return {
    label: value,
    patch: Object.fromEntries(tunables.map((t, i) => [t, parse(parts[i] ?? "")])),
  };
});
if (values.delay !== "ack" && values.delay !== "link") throw new Error("--delay is ack or link");
const delayTunable = values.delay === "link" ? "debug_link_delay_ms" : "debug_ack_delay_ms";
const points = values.points.split(",").map((point) => {
  const [clients, delay] = point.split(":").map(Number);
  if (!Number.isInteger(clients) || !Number.isInteger(delay)) {
    throw new Error(`a point is CLIENTS:ACK_DELAY_MS, got ${point}`);
  }
  return { clients: clients as number, delay: delay as number };
});
const repeats = Number(values.repeats);
const seconds = Number(values.seconds);
const warmupSeconds = Number(values.warmup);

/** The relays' calls (batches, heartbeats, held-ack fetches) and the replicas' own ack calls. */
type CallCounts = {
  calls: number;
  ackCalls: number;
  heartbeats: number;
  notices: number;
  batches: number;
  fetches: number;
};

async function relayCalls(cluster: ClusterClient): Promise<CallCounts> {
  const replicas = (await cluster.status()).replicas as unknown as {
    calls: number;
    ackCalls: number;
    heartbeats: number;
    commitPointNotices: number;
    batches: number;
    ackFetches: number;
  }[];
  const sum = (pick: (r: (typeof replicas)[number]) => number) =>
    replicas.reduce((total, r) => total + pick(r), 0);
  return {
    calls: sum((r) => r.calls),
    ackCalls: sum((r) => r.ackCalls),
    heartbeats: sum((r) => r.heartbeats),
    notices: sum((r) => r.commitPointNotices),
    batches: sum((r) => r.batches),
    fetches: sum((r) => r.ackFetches),
  };
}

const server = await startBenchServer();
try {
  const cluster = new ClusterClient(server.url, `sweep-${Date.now().toString(36)}`);
  await cluster.setReplicaCount(Number(values.replicas));
  const results = new Map<string, { ips: number[]; p50: number[]; p99: number[] }>();
  for (let round = 0; round < repeats; round++) {
    for (const { clients, delay } of points) {
      for (const setting of settings) {
        // An unknown tunable or a value out of range is refused here, with the reason.
        await cluster.patchTunables({
          ...setting.patch,
          debug_ack_delay_ms: 0,
          debug_link_delay_ms: 0,
          [delayTunable]: delay,
        });
        // Calls already out under the old setting come back first.
        await sleep(Math.max(0, 3 * delay));
        const callsBefore = await relayCalls(cluster);
        const cpuBefore = workerdCpuSeconds(server.pid);
        const r = await runInRuntimeLoad({
          url: server.url,
          cluster: cluster.name,
          clients,
          seconds,
          warmupSeconds,
          tag: nextTag(),
        });
        if (r.errors > 0) throw new Error(`${r.errors} errors: ${r.firstError}`);
        const key = `${clients} clients, ${values.delay} delay ${delay} ms, ${tunable} ${setting.label}`;
        const callsAfter = await relayCalls(cluster);
        const cpuMs = (workerdCpuSeconds(server.pid) - cpuBefore) * 1000;
        // Calls per acked insert over the whole run, warm-up included, all replicas together.
        const acked = (r.perSecond ?? []).reduce((a, b) => a + b, 0);
        const perInsert = (n: number) => (acked === 0 ? "–" : (n / acked).toFixed(2));
        process.stdout.write(
          `${key}: ${r.insertsPerSecond} inserts/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms; per insert: ${acked === 0 ? "–" : (cpuMs / acked).toFixed(2)} ms of workerd's CPU, ${perInsert(callsAfter.calls - callsBefore.calls)} relay calls (${perInsert(callsAfter.batches - callsBefore.batches)} batches, ${perInsert(callsAfter.fetches - callsBefore.fetches)} held-ack fetches, ${perInsert(callsAfter.heartbeats - callsBefore.heartbeats)} heartbeats, ${perInsert(callsAfter.notices - callsBefore.notices)} commit-point notices), ${perInsert(callsAfter.ackCalls - callsBefore.ackCalls)} ack calls\n`,
        );
        if (process.env.SWEEP_SERIES)
          process.stdout.write(`  per second: ${(r.perSecond ?? []).join(" ")}\n`);
        const entry = results.get(key) ?? { ips: [], p50: [], p99: [] };
        entry.ips.push(r.insertsPerSecond);
        entry.p50.push(r.p50Ms);
        entry.p99.push(r.p99Ms);
        results.set(key, entry);
        await sleep(1000);
      }
    }
  }
  process.stdout.write(`\nmedians of ${repeats} round(s):\n`);
  for (const [key, { ips, p50, p99 }] of results) {
    process.stdout.write(
      `${key}: ${Math.round(median(ips))} inserts/s (${ips.join(", ")}), p50 ${median(p50)} ms, p99 ${Math.round(median(p99))} ms\n`,
    );
  }
} finally {
  await server.stop();
}
