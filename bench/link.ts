/**
 * The two ways of emulating a slow replica link, side by side: held acks
 * (debug_ack_delay_ms: the replica applies at once and holds its ack back D,
 * the call itself returns at once) and a delayed link (debug_link_delay_ms:
 * every relay call takes D to come back, half each way, and the replica does
 * what it would). At light load both should put a commit at the local commit
 * plus D; under load they part, and how is the point of measuring both.
 * For each delay and client count, each mode in turn, repeated in rounds so
 * machine drift spreads over both (4 replicas, in-runtime driver).
 *
 *   npm run bench:link -- [--delays 5,20,100] [--clients 1,8,64] [--repeats 2]
 *                         [--seconds 4] [--warmup 1] [--calls 1] [--gap 0]
 *
 * `--calls` and `--gap` set relay_calls_in_flight and relay_call_gap_ms for every run. Prints one line per run
 * and a table of medians: inserts/s, p50 and p99, and p50 less the delay.
 */
import { parseArgs } from "node:util";
import { ClusterClient, sleep } from "./suite/cluster.ts";
import { nextTag } from "./suite/measure.ts";
import { runInRuntimeLoad } from "./suite/runtime-driver.ts";
import { startBenchServer } from "./suite/server.ts";
import { median } from "./suite/stats.ts";

const { values } = parseArgs({
  options: {
    delays: { type: "string", default: "5,20,100" },
    clients: { type: "string", default: "1,8,64" },
    repeats: { type: "string", default: "2" },
    seconds: { type: "string", default: "4" },
    warmup: { type: "string", default: "1" },
    calls: { type: "string", default: "1" },
    gap: { type: "string", default: "0" },
  },
});
const numbers = (text: string, name: string) =>
  text.split(",").map((v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name}: ${v} is not a whole number`);
    return n;
  });
const delays = numbers(values.delays, "delays");
const clientCounts = numbers(values.clients, "clients");
const repeats = Number(values.repeats);
const seconds = Number(values.seconds);
const warmupSeconds = Number(values.warmup);
const calls = Number(values.calls);
const gap = Number(values.gap);

const MODES = {
  "held acks": (d: number) => ({ debug_ack_delay_ms: d, debug_link_delay_ms: 0 }),
  "delayed link": (d: number) => ({ debug_ack_delay_ms: 0, debug_link_delay_ms: d }),
} as const;
type Mode = keyof typeof MODES;

interface Runs {
  ips: number[];
  p50: number[];
  p99: number[];
}

const server = await startBenchServer();
const results = new Map<string, Runs>();
const keyOf = (delay: number, clients: number, mode: Mode) => `${delay}|${clients}|${mode}`;
try {
  const cluster = new ClusterClient(server.url, `link-${Date.now().toString(36)}`);
  await cluster.setReplicaCount(4);
  for (let round = 0; round < repeats; round++) {
    for (const delay of delays) {
      for (const clients of clientCounts) {
        const modes = Object.keys(MODES) as Mode[];
        for (const mode of round % 2 === 0 ? modes : [...modes].reverse()) {
          await cluster.patchTunables({
            ...MODES[mode](delay),
            relay_calls_in_flight: calls,
            relay_call_gap_ms: gap,
          });
          // Calls already out under the old setting come back first.
          await sleep(Math.max(500, 3 * delay));
          const r = await runInRuntimeLoad({
            url: server.url,
            cluster: cluster.name,
            clients,
            seconds,
            warmupSeconds,
            tag: nextTag(),
          });
          if (r.errors > 0) throw new Error(`${r.errors} errors: ${r.firstError}`);
          process.stdout.write(
            `D ${delay} ms, ${clients} clients, ${mode}: ${r.insertsPerSecond} inserts/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms\n`,
          );
          const key = keyOf(delay, clients, mode);
          const runs = results.get(key) ?? { ips: [], p50: [], p99: [] };
          runs.ips.push(r.insertsPerSecond);
          runs.p50.push(r.p50Ms);
          runs.p99.push(r.p99Ms);
          results.set(key, runs);
        }
      }
    }
  }
} finally {
  await server.stop();
}

const fmt = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));
console.log(
  "\n| delay D | clients | emulation | inserts/s | p50 ms | p50 - D | p99 ms |\n| ---: | ---: | --- | ---: | ---: | ---: | ---: |",
);
for (const delay of delays) {
  for (const clients of clientCounts) {
    for (const mode of Object.keys(MODES) as Mode[]) {
      const runs = results.get(keyOf(delay, clients, mode));
      if (runs === undefined) continue;
      const p50 = median(runs.p50);
      console.log(
        `| ${delay} | ${clients} | ${mode} | ${Math.round(median(runs.ips))} | ${fmt(p50)} | ${fmt(p50 - delay)} | ${fmt(median(runs.p99))} |`,
      );
    }
  }
}
console.log(
  `\n${repeats} round(s), modes alternating, medians; ${seconds} s per run after ${warmupSeconds} s of warm-up; relay_calls_in_flight ${calls}, relay_call_gap_ms ${gap}; 4 replicas, in-runtime driver.`,
);
