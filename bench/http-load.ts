/**
 * A first load driver over HTTP: each client inserts single rows into its own
 * table through the rows route, one insert in flight, for a fixed time.
 * Prints inserts/s and commit latency percentiles.
 *
 *   node bench/http-load.ts --clients 16 --seconds 20 [--url http://127.0.0.1:8787] [--cluster main]
 */
import { parseArgs } from "node:util";
import { percentile } from "./stats.ts";

const { values } = parseArgs({
  options: {
    url: { type: "string", default: "http://127.0.0.1:8787" },
    cluster: { type: "string", default: "main" },
    clients: { type: "string", default: "16" },
    seconds: { type: "string", default: "20" },
    token: { type: "string", default: "dev-data-token" },
  },
});

const base = values.url.replace(/\/$/, "");
const clients = Number(values.clients);
const seconds = Number(values.seconds);
const headers = { authorization: `Bearer ${values.token}`, "content-type": "application/json" };
const run = Date.now().toString(36);

async function post(path: string, body: unknown, extra: Record<string, string> = {}) {
  const response = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { ...headers, ...extra },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${response.status} ${text.slice(0, 200)}`);
  return JSON.parse(text) as unknown;
}

async function client(index: number, until: number, latencies: number[], errors: string[]) {
  const table = `load_${run}_${index}`;
  await post(`/v1/clusters/${values.cluster}/exec`, {
    statements: [{ sql: `CREATE TABLE ${table} (id INTEGER PRIMARY KEY, v INTEGER, at INTEGER)` }],
  });
  let n = 0;
  while (Date.now() < until) {
    const started = performance.now();
    try {
      await post(
        `/v1/clusters/${values.cluster}/tables/${table}/rows`,
        { rows: [{ v: n, at: Date.now() }] },
        { "idempotency-key": `${table}-${n}` },
      );
      latencies.push(performance.now() - started);
    } catch (error) {
      errors.push(String(error));
    }
    n++;
  }
}

const latencies: number[] = [];
const errors: string[] = [];
const started = Date.now();
const until = started + seconds * 1000;
const progress = setInterval(() => {
  const elapsed = (Date.now() - started) / 1000;
  process.stderr.write(
    `\r${elapsed.toFixed(0)}s: ${latencies.length} inserts, ${errors.length} errors`,
  );
}, 1000);
await Promise.all(Array.from({ length: clients }, (_, i) => client(i, until, latencies, errors)));
clearInterval(progress);
process.stderr.write("\n");
const elapsed = (Date.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const result = {
  driver: "http",
  clients,
  seconds: Math.round(elapsed * 10) / 10,
  inserts: latencies.length,
  insertsPerSecond: Math.round(latencies.length / elapsed),
  p50Ms: Math.round(percentile(latencies, 50)),
  p99Ms: Math.round(percentile(latencies, 99)),
  errors: errors.length,
  firstError: errors[0] ?? null,
};
console.log(JSON.stringify(result));
