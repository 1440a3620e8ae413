/**
 * What the libSQL endpoint costs next to the HTTP API, measured side by side
 * in one run against `wrangler dev` (collector off): single-row inserts and
 * strong reads by `@libsql/client` against `fetch` to /exec and /query, and
 * inserts with an exact `RETURNING *` against plain ones, in alternating
 * rounds; and an interactive transaction of k inserts against a
 * batch of the same k (each request of a transaction re-runs it so far).
 *
 *   node bench/libsql.ts [--clients 8] [--seconds 5] [--rounds 3]
 */
import { parseArgs } from "node:util";
import { createClient } from "@libsql/client";
import { startDevServer } from "../test/e2e/dev-server.ts";
import { BENCH_DEV_ENV } from "./suite/server.ts";
import { percentile } from "./stats.ts";

const { values } = parseArgs({
  options: {
    clients: { type: "string", default: "8" },
    seconds: { type: "string", default: "5" },
    rounds: { type: "string", default: "3" },
  },
});
const CLIENTS = Number(values.clients);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const DATA = "dev-data-token";
const CLUSTER = "libsql-bench";

const server = await startDevServer("wrangler.toml", BENCH_DEV_ENV);
const base = `${server.url}/libsql/${CLUSTER}/`;
const db = createClient({ url: base, authToken: DATA });

async function api(path: string, body: unknown): Promise<void> {
  const response = await fetch(`${server.url}/v1/clusters/${CLUSTER}/${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${DATA}` },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  await response.arrayBuffer();
}

type Op = (client: number, i: number) => Promise<void>;

/** `CLIENTS` loops, one operation in flight each, for SECONDS: operations/s and latencies. */
async function load(op: Op): Promise<{ perSecond: number; latencies: number[] }> {
  const latencies: number[] = [];
  const end = Date.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      for (let i = 0; Date.now() < end; i++) {
        const start = performance.now();
        await op(client, i);
        latencies.push(performance.now() - start);
      }
    }),
  );
  return { perSecond: latencies.length / SECONDS, latencies };
}

await db.execute("CREATE TABLE IF NOT EXISTS t (c INTEGER, i INTEGER, v TEXT)");
await db.execute("CREATE TABLE IF NOT EXISTS r (k INTEGER PRIMARY KEY, v TEXT)");
await db.execute("INSERT OR REPLACE INTO r VALUES (1, 'x')");

const ops: Record<string, Op> = {
  "insert /exec": (c, i) =>
    api("exec", { statements: [{ sql: "INSERT INTO t VALUES (?, ?, 'e')", params: [c, i] }] }),
  "insert libSQL": async (c, i) => {
    await db.execute({ sql: "INSERT INTO t VALUES (?, ?, 'l')", args: [BigInt(c), BigInt(i)] });
  },
  "insert libSQL RETURNING *": async (c, i) => {
    await db.execute({
      sql: "INSERT INTO t VALUES (?, ?, 'l') RETURNING *",
      args: [BigInt(c), BigInt(i)],
    });
  },
  "strong read /query": () => api("query", { sql: "SELECT v FROM r WHERE k = 1" }),
  "strong read libSQL": async () => {
    await db.execute("SELECT v FROM r WHERE k = 1");
  },
};

const results = new Map<string, { perSecond: number[]; latencies: number[] }>();
for (let round = 0; round < ROUNDS; round++) {
  const names = Object.keys(ops);
  // Alternate the order each round so neither side always runs on a warmer server.
  for (const name of round % 2 === 0 ? names : [...names].reverse()) {
    const op = ops[name];
    if (op === undefined) continue;
    const run = await load(op);
    const kept = results.get(name) ?? { perSecond: [], latencies: [] };
    kept.perSecond.push(run.perSecond);
    kept.latencies.push(...run.latencies);
    results.set(name, kept);
  }
}

const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );
console.log(`\n${CLIENTS} clients, ${ROUNDS} alternating rounds of ${SECONDS} s each\n`);
console.log("| operation | ops/s (median of rounds) | p50 ms | p99 ms |");
console.log("| --- | ---: | ---: | ---: |");
for (const [name, r] of results) {
  const sorted = [...r.latencies].sort((a, b) => a - b);
  console.log(
    `| ${name} | ${Math.round(median(r.perSecond))} | ${percentile(sorted, 50).toFixed(1)} | ${percentile(sorted, 99).toFixed(1)} |`,
  );
}
const ratio = (a: string, b: string) =>
  (median(results.get(a)?.perSecond ?? [0]) / median(results.get(b)?.perSecond ?? [1])).toFixed(2);
console.log(
  `\nlibSQL/HTTP API: inserts ${ratio("insert libSQL", "insert /exec")}x, strong reads ${ratio("strong read libSQL", "strong read /query")}x`,
);
console.log(
  `exact RETURNING * / plain insert (both libSQL): ${ratio("insert libSQL RETURNING *", "insert libSQL")}x`,
);

console.log("\n| k inserts | interactive transaction ms (p50) | batch ms (p50) | ratio |");
console.log("| ---: | ---: | ---: | ---: |");
for (const k of [1, 5, 20, 50]) {
  const tx: number[] = [];
  const batch: number[] = [];
  for (let n = 0; n < 15; n++) {
    let start = performance.now();
    const t = await db.transaction("write");
    for (let j = 0; j < k; j++)
      await t.execute({ sql: "INSERT INTO t VALUES (-1, ?, 'tx')", args: [BigInt(j)] });
    await t.commit();
    tx.push(performance.now() - start);
    start = performance.now();
    await db.batch(
      Array.from({ length: k }, (_, j) => ({
        sql: "INSERT INTO t VALUES (-2, ?, 'b')",
        args: [BigInt(j)],
      })),
      "write",
    );
    batch.push(performance.now() - start);
  }
  const a = median(tx);
  const b = median(batch);
  console.log(`| ${k} | ${a.toFixed(1)} | ${b.toFixed(1)} | ${(a / b).toFixed(1)}x |`);
}

db.close();
await server.stop();
