/**
 * Scale to zero, measured: the CPU of `wrangler dev` (workerd and wrangler's
 * own node process, from /proc) with 0, 10 and 100 idle clusters in its state,
 * awake clusters beside them for contrast, and again after a restart on the
 * same state; then the latency of the first request to a sleeping cluster (a
 * write, a strong read on a replica, one on the master) and to one whose
 * objects are not loaded at all (after the restart), each beside the same
 * request on the warm cluster right after.
 *
 *   node bench/idle.ts [--clusters 100] [--sample-s 10] [--windows 3] [--idle-ms 3000] [--probes 8]
 */
import { rmSync } from "node:fs";
import { parseArgs } from "node:util";
import { groupCpuShare } from "./suite/processes.ts";
import { startBenchServer } from "./suite/server.ts";
import { benchState, makeStateDir } from "./suite/state-dir.ts";
import { median } from "./suite/stats.ts";

const { values } = parseArgs({
  options: {
    clusters: { type: "string", default: "100" },
    "sample-s": { type: "string", default: "10" },
    "idle-ms": { type: "string", default: "3000" },
    probes: { type: "string", default: "8" },
    windows: { type: "string", default: "3" },
  },
});
const CLUSTERS = Number(values.clusters);
const SAMPLE_MS = Number(values["sample-s"]) * 1000;
const IDLE_MS = Number(values["idle-ms"]);
const PROBES = Number(values.probes);
/** Consecutive CPU samples of each sleeping state: whether what is left decays. */
const WINDOWS = Number(values.windows);
const AWAKE = Math.min(10, CLUSTERS);
const log = (text: string) => process.stderr.write(`${text}\n`);

const data = { authorization: "Bearer dev-data-token", "content-type": "application/json" };
const admin = { authorization: "Bearer dev-admin-token", "content-type": "application/json" };

async function send(url: string, init: RequestInit): Promise<{ ms: number; body: unknown }> {
  const started = performance.now();
  const response = await fetch(url, init);
  const text = await response.text();
  const ms = performance.now() - started;
  if (!response.ok)
    throw new Error(`${init.method} ${url}: ${response.status} ${text.slice(0, 300)}`);
  return { ms, body: JSON.parse(text) };
}

const nameOf = (i: number) => `idle-${i}`;

function makeCalls(base: string) {
  const exec = (c: string, sql: string) =>
    send(`${base}/v1/clusters/${c}/exec`, {
      method: "POST",
      headers: data,
      body: JSON.stringify({ statements: [{ sql }] }),
    });
  const read = (c: string, replica: string) =>
    send(`${base}/v1/clusters/${c}/query`, {
      method: "POST",
      headers: data,
      body: JSON.stringify({ sql: "SELECT count(*) AS n FROM t", consistency: "strong", replica }),
    });
  const tune = (c: string, patch: Record<string, unknown>) =>
    send(`${base}/admin/clusters/${c}/tunables`, {
      method: "PATCH",
      headers: admin,
      body: JSON.stringify(patch),
    });
  const idle = async (c: string) => {
    const { body } = await send(`${base}/admin/clusters/${c}/status`, {
      method: "GET",
      headers: admin,
    });
    return (body as { master: { idle: { asleep: boolean; awakeBecause: string | null } } }).master
      .idle;
  };
  return { exec, read, tune, idle };
}

type Calls = ReturnType<typeof makeCalls>;

async function create(calls: Calls, from: number, to: number, idleAfterMs: number) {
  for (let i = from; i < to; i++) {
    const c = nameOf(i);
    await calls.exec(c, "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT)");
    await calls.tune(c, { idle_after_ms: idleAfterMs });
    await calls.exec(c, "INSERT INTO t (v) VALUES ('x')");
  }
}

async function allAsleep(calls: Calls, count: number) {
  for (let i = 0; i < count; i++) {
    const until = Date.now() + 60_000;
    for (;;) {
      const idle = await calls.idle(nameOf(i));
      if (idle.asleep) break;
      if (Date.now() > until) {
        throw new Error(`${nameOf(i)} did not fall asleep in 60 s: ${idle.awakeBecause}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

const rows: string[][] = [];
async function cpuLine(pid: number, what: string, windows = 1) {
  for (let w = 1; w <= windows; w++) {
    const share = await groupCpuShare(pid, SAMPLE_MS);
    const pct = (x: number | undefined) => `${((x ?? 0) * 100).toFixed(1)}%`;
    const label = windows === 1 ? what : `${what}, window ${w} of ${windows}`;
    rows.push([label, pct(share.total), pct(share.byCommand.workerd), pct(share.byCommand.node)]);
    log(`${label}: ${pct(share.total)} of a core`);
  }
}

const latency: string[][] = [];
/** `first` on each of `clusters`, then the same request again at once (warm). */
async function firstVsWarm(
  what: string,
  clusters: string[],
  request: (c: string) => Promise<{ ms: number }>,
) {
  const first: number[] = [];
  const warm: number[] = [];
  for (const c of clusters) {
    first.push((await request(c)).ms);
    warm.push((await request(c)).ms);
  }
  const f = median(first);
  const w = median(warm);
  latency.push([what, f.toFixed(1), w.toFixed(1), (f - w).toFixed(1)]);
  log(`${what}: first ${f.toFixed(1)} ms, warm ${w.toFixed(1)} ms`);
}

const persist = makeStateDir(benchState(), "dosql-idle-");
const slice = (from: number) => Array.from({ length: PROBES }, (_, k) => nameOf(from + k));
try {
  let server = await startBenchServer(".", persist);
  let calls = makeCalls(server.url);
  try {
    await cpuLine(server.pid, "0 clusters");
    log(`creating ${AWAKE} clusters that never sleep (idle_after_ms 0)`);
    await create(calls, 0, AWAKE, 0);
    await cpuLine(server.pid, `${AWAKE} clusters awake (idle_after_ms 0)`);
    for (let i = 0; i < AWAKE; i++) await calls.tune(nameOf(i), { idle_after_ms: IDLE_MS });
    await allAsleep(calls, AWAKE);
    await cpuLine(server.pid, `${AWAKE} clusters asleep`, WINDOWS);
    log(`creating ${CLUSTERS - AWAKE} more`);
    await create(calls, AWAKE, CLUSTERS, IDLE_MS);
    await allAsleep(calls, CLUSTERS);
    await cpuLine(server.pid, `${CLUSTERS} clusters asleep`, WINDOWS);
    if (CLUSTERS >= 3 * PROBES) {
      await firstVsWarm("write, master asleep", slice(0), (c) =>
        calls.exec(c, "INSERT INTO t (v) VALUES ('y')"),
      );
      await firstVsWarm("strong read on replica-1, master asleep", slice(PROBES), (c) =>
        calls.read(c, "replica-1"),
      );
      await firstVsWarm("strong read on the master, master asleep", slice(2 * PROBES), (c) =>
        calls.read(c, "master"),
      );
    }
  } finally {
    await server.stop();
  }
  log("restarting wrangler dev on the same state");
  server = await startBenchServer(".", persist);
  calls = makeCalls(server.url);
  try {
    await new Promise((r) => setTimeout(r, 3_000));
    await cpuLine(server.pid, `${CLUSTERS} clusters in its state, after a restart`, WINDOWS);
    if (CLUSTERS >= 5 * PROBES) {
      await firstVsWarm("write, objects not loaded", slice(3 * PROBES), (c) =>
        calls.exec(c, "INSERT INTO t (v) VALUES ('z')"),
      );
      await firstVsWarm("strong read on replica-1, objects not loaded", slice(4 * PROBES), (c) =>
        calls.read(c, "replica-1"),
      );
    }
  } finally {
    await server.stop();
  }
} finally {
  rmSync(persist, { recursive: true, force: true });
}

const table = (head: string[], body: string[][]) =>
  [
    `| ${head.join(" | ")} |`,
    `| ${head.map(() => "---").join(" | ")} |`,
    ...body.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
console.log(
  `CPU of wrangler dev over ${SAMPLE_MS / 1000} s (share of one core), idle_after_ms ${IDLE_MS}:\n`,
);
console.log(table(["state", "all", "workerd", "node (wrangler)"], rows));
console.log(
  `\nFirst request against the same request right after (medians of ${PROBES} clusters, ms, through wrangler dev's proxy):\n`,
);
console.log(table(["request", "first", "warm", "first - warm"], latency));
