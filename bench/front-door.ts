/**
 * HTTP with and without wrangler dev's proxy, side by side. The same bundle is
 * served by `wrangler dev` (its proxy Worker in front) and by workerd alone
 * (suite/direct-server.ts), one after the other in each round, servings
 * alternating so machine drift spreads over both. On each: a no-op route (GET /,
 * answered by the front door without a Durable Object) at `--noop` concurrent
 * requests; inserts over HTTP through the typed client; and the same inserts
 * from the in-runtime driver (no HTTP). Each insert's HTTP p50 less the
 * in-runtime one is what the front door and the hop to it add per request.
 *
 *   npm run bench:http -- [--clients 1,8,64] [--repeats 2] [--seconds 4]
 *                         [--warmup 1] [--noop 16] [--replicas 4]
 */
import { parseArgs } from "node:util";
import { ClusterClient } from "./suite/cluster.ts";
import { startDirectBenchServer } from "./suite/direct-server.ts";
import { runHttpLoad } from "./suite/http-driver.ts";
import { nextTag } from "./suite/measure.ts";
import { runInRuntimeLoad } from "./suite/runtime-driver.ts";
import { startBenchServer } from "./suite/server.ts";
import { median } from "./suite/stats.ts";

const { values } = parseArgs({
  options: {
    clients: { type: "string", default: "1,8,64" },
    repeats: { type: "string", default: "2" },
    seconds: { type: "string", default: "4" },
    warmup: { type: "string", default: "1" },
    noop: { type: "string", default: "16" },
    replicas: { type: "string", default: "4" },
  },
});
const clientCounts = values.clients.split(",").map(Number);
const repeats = Number(values.repeats);
const seconds = Number(values.seconds);
const warmupSeconds = Number(values.warmup);
const noopClients = Number(values.noop);
const replicas = Number(values.replicas);

const SERVINGS = {
  "wrangler dev (proxy)": () => startBenchServer(),
  "workerd alone": () => startDirectBenchServer(),
} as const;
type Serving = keyof typeof SERVINGS;
const samples = new Map<string, number[]>();
const push = (key: string, n: number) => samples.set(key, [...(samples.get(key) ?? []), n]);
const med = (key: string) => median(samples.get(key) ?? [Number.NaN]);

/** Requests/s of GET / with `clients` requests in flight for `seconds`. */
async function noopRate(url: string, clients: number): Promise<number> {
  const until = Date.now() + seconds * 1000;
  let done = 0;
  const client = async () => {
    while (Date.now() < until) {
      const res = await fetch(`${url}/`);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`GET / answered ${res.status}`);
      done++;
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  return Math.round(done / seconds);
}

for (let round = 0; round < repeats; round++) {
  const servings = Object.keys(SERVINGS) as Serving[];
  for (const serving of round % 2 === 0 ? servings : [...servings].reverse()) {
    const server = await SERVINGS[serving]();
    try {
      const cluster = new ClusterClient(server.url, `fd-${Date.now().toString(36)}`);
      await cluster.setReplicaCount(replicas);
      const rate = await noopRate(server.url, noopClients);
      push(`${serving}|noop`, rate);
      console.log(`${serving}: GET / ${rate} requests/s (${noopClients} in flight)`);
      for (const clients of clientCounts) {
        const load = { url: server.url, cluster: cluster.name, clients, seconds, warmupSeconds };
        const http = await runHttpLoad({ ...load, tag: nextTag() });
        const runtime = await runInRuntimeLoad({ ...load, tag: nextTag() });
        for (const [driver, r] of [
          ["http", http],
          ["runtime", runtime],
        ] as const) {
          if (r.errors > 0)
            throw new Error(`${serving} ${driver}: ${r.errors} errors: ${r.firstError}`);
          push(`${serving}|${clients}|${driver}|ips`, r.insertsPerSecond);
          push(`${serving}|${clients}|${driver}|p50`, r.p50Ms);
        }
        console.log(
          `${serving}, ${clients} clients: HTTP ${http.insertsPerSecond} inserts/s p50 ${http.p50Ms} ms; in-runtime ${runtime.insertsPerSecond} inserts/s p50 ${runtime.p50Ms} ms`,
        );
      }
    } finally {
      await server.stop();
    }
  }
}

const fmt = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));
console.log(`\n| serving | GET / requests/s (${noopClients} in flight) |\n| --- | ---: |`);
for (const serving of Object.keys(SERVINGS)) {
  console.log(`| ${serving} | ${Math.round(med(`${serving}|noop`))} |`);
}
console.log(
  "\n| serving | clients | HTTP inserts/s | HTTP p50 ms | in-runtime inserts/s | in-runtime p50 ms | HTTP / in-runtime | p50 added by HTTP |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
);
for (const serving of Object.keys(SERVINGS)) {
  for (const clients of clientCounts) {
    const at = (what: string) => med(`${serving}|${clients}|${what}`);
    const ratio = at("http|ips") / at("runtime|ips");
    console.log(
      `| ${serving} | ${clients} | ${Math.round(at("http|ips"))} | ${fmt(at("http|p50"))} | ${Math.round(at("runtime|ips"))} | ${fmt(at("runtime|p50"))} | ${ratio.toFixed(2)}x | ${fmt(at("http|p50") - at("runtime|p50"))} |`,
    );
  }
}
console.log(
  `\n${repeats} round(s), servings alternating, medians; ${seconds} s per run after ${warmupSeconds} s of warm-up; ${replicas} replicas; the Node client shares the machine's cores with the cluster.`,
);
