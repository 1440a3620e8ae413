/**
 * The local Durable Objects' storage on this machine's disk beside in memory
 * (tmpfs), side by side: the same bundle served by `wrangler dev` with its
 * state in each, one after the other in each round, kinds alternating so
 * machine drift spreads over both (suite/state-dir.ts says why the benchmarks
 * keep it in memory by default). On each:
 *
 *   - what one storage commit costs the thread: the master's local commit of a
 *     keyed insert (bench/cost-probe.ts) made `--n` times in one turn (one
 *     storage commit for all) and in a turn each (a storage commit each, as a
 *     request's), less the turns alone;
 *   - single-row inserts with the in-runtime driver at each `--replicas` count,
 *     with workerd's CPU per insert (read from /proc over the run).
 *
 *   npm run bench:storage -- [--clients 8,64] [--replicas 0,4] [--repeats 2]
 *                            [--seconds 5] [--warmup 1] [--n 1000]
 */
import { parseArgs } from "node:util";
import type { CostOp } from "./cost-types.ts";
import { ClusterClient } from "./suite/cluster.ts";
import { nextTag } from "./suite/measure.ts";
import { workerdCpuSeconds } from "./suite/processes.ts";
import { runInRuntimeLoad } from "./suite/runtime-driver.ts";
import { startBenchServer } from "./suite/server.ts";
import { type BenchState, describeState } from "./suite/state-dir.ts";
import { median } from "./suite/stats.ts";

const { values } = parseArgs({
  options: {
    clients: { type: "string", default: "8,64" },
    replicas: { type: "string", default: "0,4" },
    repeats: { type: "string", default: "2" },
    seconds: { type: "string", default: "5" },
    warmup: { type: "string", default: "1" },
    n: { type: "string", default: "1000" },
  },
});
const clientCounts = values.clients.split(",").map(Number);
const replicaCounts = values.replicas.split(",").map(Number);
const repeats = Number(values.repeats);
const seconds = Number(values.seconds);
const warmupSeconds = Number(values.warmup);
const n = Number(values.n);
for (const v of [...clientCounts, ...replicaCounts, repeats, seconds, warmupSeconds, n]) {
  if (!Number.isInteger(v) || v < 0) throw new Error(`not a count: ${v}`);
}

const KINDS: BenchState[] = ["disk", "memory"];
const samples = new Map<string, number[]>();
const push = (key: string, v: number) => samples.set(key, [...(samples.get(key) ?? []), v]);
const med = (key: string) => median(samples.get(key) ?? [Number.NaN]);

/** µs per operation of `op` run `count` times in one call (less an empty call). */
async function probe(url: string, object: string, op: CostOp, count: number): Promise<number> {
  const call = async (o: CostOp, c: number) => {
    const started = performance.now();
    const response = await fetch(`${url}/bench/costs`, {
      method: "POST",
      body: JSON.stringify({ object, op: o, n: c }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${o}: ${response.status} ${text.slice(0, 300)}`);
    return performance.now() - started;
  };
  const empty = await call("none", 0);
  return ((await call(op, count)) - empty) * (1000 / count);
}

for (let round = 0; round < repeats; round++) {
  for (const kind of round % 2 === 0 ? KINDS : [...KINDS].reverse()) {
    const server = await startBenchServer(".", undefined, 0, kind);
    try {
      const object = `storage-${Date.now()}`;
      // Warm-up: the probe's tables, compiled statements, the JIT.
      for (const op of ["commit", "turns", "commit-turns"] as const) {
        await probe(server.url, object, op, 200);
      }
      const one = await probe(server.url, object, "commit", n);
      const turns = await probe(server.url, object, "turns", n);
      const each = await probe(server.url, object, "commit-turns", n);
      push(`${kind}|commit`, one);
      push(`${kind}|storage`, each - turns - one);
      console.log(
        `${kind}: local commit ${one.toFixed(1)} µs in one turn, ${(each - turns).toFixed(1)} µs in a turn each (storage commit ${(each - turns - one).toFixed(1)} µs)`,
      );
      for (const replicas of replicaCounts) {
        const cluster = new ClusterClient(server.url, `st-${replicas}-${Date.now().toString(36)}`);
        await cluster.patchTunables({ coherency_rejoin_penalty_ms: 0 });
        await cluster.setReplicaCount(replicas);
        const lagging = await cluster.waitCoherent(30_000);
        if (lagging.length > 0) throw new Error(`${lagging.join(", ")} not coherent`);
        for (const clients of clientCounts) {
          const cpuBefore = workerdCpuSeconds(server.pid);
          const r = await runInRuntimeLoad({
            url: server.url,
            cluster: cluster.name,
            clients,
            seconds,
            warmupSeconds,
            tag: nextTag(),
          });
          const cpu = workerdCpuSeconds(server.pid) - cpuBefore;
          if (r.errors > 0) throw new Error(`${kind}: ${r.errors} errors: ${r.firstError}`);
          // The run's whole CPU (its tables' set-up and warm-up too) over every insert acked.
          const acked = (r.perSecond ?? []).reduce((a, b) => a + b, 0);
          const key = `${kind}|${replicas}|${clients}`;
          push(`${key}|ips`, r.insertsPerSecond);
          push(`${key}|p50`, r.p50Ms);
          push(`${key}|cpu`, (cpu * 1e6) / acked);
          console.log(
            `${kind}, ${replicas} replicas, ${clients} clients: ${r.insertsPerSecond} inserts/s, p50 ${r.p50Ms} ms, ${((cpu * 1e6) / acked).toFixed(0)} µs of workerd's CPU per insert`,
          );
        }
      }
    } finally {
      await server.stop();
    }
  }
}

console.log("\n| storage | local commit, µs | storage commit of it, µs |\n| --- | ---: | ---: |");
for (const kind of KINDS) {
  console.log(
    `| ${describeState(kind)} | ${med(`${kind}|commit`).toFixed(1)} | ${med(`${kind}|storage`).toFixed(1)} |`,
  );
}
console.log(
  "\n| replicas | clients | disk inserts/s | memory inserts/s | memory / disk | disk p50 ms | memory p50 ms | disk CPU µs/insert | memory CPU µs/insert |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
);
for (const replicas of replicaCounts) {
  for (const clients of clientCounts) {
    const at = (kind: BenchState, what: string) => med(`${kind}|${replicas}|${clients}|${what}`);
    console.log(
      `| ${replicas} | ${clients} | ${Math.round(at("disk", "ips"))} | ${Math.round(at("memory", "ips"))} | ${(at("memory", "ips") / at("disk", "ips")).toFixed(2)}x | ${at("disk", "p50")} | ${at("memory", "p50")} | ${Math.round(at("disk", "cpu"))} | ${Math.round(at("memory", "cpu"))} |`,
    );
  }
}
console.log(
  `\n${repeats} round(s), kinds alternating, medians; ${seconds} s per run after ${warmupSeconds} s of warm-up; in-runtime driver; ${n} commits per probe. CPU per insert counts the run's whole workerd time (its tables' set-up and warm-up too) over the inserts it acked.`,
);
