/**
 * Two builds side by side in one run: this checkout and a baseline commit,
 * each served by its own `wrangler dev`, runs alternating so machine drift
 * cancels. It measures what a change to the commit path costs:
 *   - single-row inserts: 64 clients, 4 replicas, in-runtime driver (inserts/s, p50);
 *   - one UPDATE of 10,000 rows through the front door (commit latency, log bytes).
 * Written for the choice between shipping statements and shipping rows
 * (docs/architecture.md); the baseline defaults to the last commit that
 * shipped statements.
 *
 *   node bench/compare-builds.ts [--baseline 52c55c3] [--seconds 6] [--warmup 2] [--repeats 3]
 */
import { execFileSync } from "node:child_process";
import { existsSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { DosqliteClient } from "../client/index.ts";
import { startBenchServer } from "./suite/server.ts";
import { median } from "./suite/stats.ts";

const { values } = parseArgs({
  options: {
    baseline: { type: "string", default: "52c55c3" },
    seconds: { type: "string", default: "6" },
    warmup: { type: "string", default: "2" },
    repeats: { type: "string", default: "3" },
    clients: { type: "string", default: "64" },
    rows: { type: "string", default: "10000" },
  },
});
const seconds = Number(values.seconds);
const repeats = Number(values.repeats);
const bulkRows = Number(values.rows);

function checkout(rev: string): string {
  const dir = join(tmpdir(), `dosql-baseline-${rev}`);
  if (!existsSync(dir)) {
    execFileSync("git", ["worktree", "add", "--detach", dir, rev], { stdio: "ignore" });
  }
  const modules = join(dir, "node_modules");
  if (!existsSync(modules)) symlinkSync(resolve("node_modules"), modules);
  return dir;
}

const data = { authorization: "Bearer dev-data-token", "content-type": "application/json" };

/** The admin plane of one run's cluster, through the typed client. */
const adminOf = (url: string, cluster: string) =>
  new DosqliteClient({ url, cluster, adminToken: "dev-admin-token" }).admin;

async function json<T>(response: Response): Promise<T> {
  const text = await response.text();
  if (!response.ok) throw new Error(`${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

/**
 * One exec, timed, sent without an Idempotency-Key (so not through the
 * client, which gives every write one): a key's saved result would travel in
 * the log record and add to the log bytes this run measures.
 */
async function execSql(url: string, cluster: string, sql: string): Promise<number> {
  const started = performance.now();
  await json(
    await fetch(`${url}/v1/clusters/${cluster}/exec`, {
      method: "POST",
      headers: data,
      body: JSON.stringify({ statements: [{ sql }] }),
    }),
  );
  return performance.now() - started;
}

async function logBytes(url: string, cluster: string): Promise<number> {
  return (await adminOf(url, cluster).status()).master.logBytes;
}

let runNumber = 0;

async function inserts(url: string): Promise<{ perSecond: number; p50: number; cluster: string }> {
  runNumber++;
  const cluster = `cmp-${Date.now().toString(36)}-${runNumber}`;
  await adminOf(url, cluster).patchTunables({ async_dist_commit: true });
  await new Promise((r) => setTimeout(r, 400));
  const result = await json<{ insertsPerSecond: number; p50Ms: number }>(
    await fetch(`${url}/bench/run`, {
      method: "POST",
      body: JSON.stringify({
        cluster,
        clients: Number(values.clients),
        seconds,
        warmupSeconds: Number(values.warmup),
        tag: `r${runNumber}`,
      }),
    }),
  );
  return { perSecond: result.insertsPerSecond, p50: result.p50Ms, cluster };
}

async function truncatedThrough(url: string, cluster: string): Promise<number> {
  const status = await adminOf(url, cluster).status();
  return (status.master as unknown as { truncatedThrough?: number }).truncatedThrough ?? 0;
}

async function bulkUpdate(
  url: string,
  tunables: Record<string, unknown> = {},
): Promise<{ ms: number; bytes: number }> {
  runNumber++;
  const cluster = `bulk-${Date.now().toString(36)}-${runNumber}`;
  if (Object.keys(tunables).length > 0) {
    await adminOf(url, cluster).patchTunables(tunables);
  }
  await execSql(url, cluster, "CREATE TABLE big (id INTEGER PRIMARY KEY, v INTEGER, pad TEXT)");
  await execSql(
    url,
    cluster,
    `INSERT INTO big (v, pad) WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s LIMIT ${bulkRows}) SELECT x, 'row padding of some forty characters..' FROM s`,
  );
  const before = await logBytes(url, cluster);
  const ms = await execSql(url, cluster, "UPDATE big SET v = v + 1");
  return { ms, bytes: (await logBytes(url, cluster)) - before };
}

const builds = [
  { name: `baseline ${values.baseline}`, root: checkout(values.baseline) },
  { name: "this checkout", root: "." },
];
const results = builds.map(() => ({
  perSecond: [] as number[],
  p50: [] as number[],
  bulkMs: [] as number[],
  bulkBytes: [] as number[],
  rowsMs: [] as number[],
  rowsBytes: [] as number[],
}));
// One build serves at a time, on a fresh server: a server left up would keep its
// earlier runs' clusters heartbeating and take CPU from the other build's run.
for (let r = 0; r < repeats; r++) {
  // Alternate which build goes first, so drift within a repeat cancels too.
  const order = r % 2 === 0 ? [0, 1] : [1, 0];
  for (const i of order) {
    const build = builds[i];
    const out = results[i];
    if (build === undefined || out === undefined) continue;
    process.stderr.write(`  ${build.name}: starting ... `);
    const server = await startBenchServer(build.root);
    try {
      const ins = await inserts(server.url);
      // How far the log was truncated during the run: what the replicas followed,
      // indexing the saved results of the records they dropped (log-results.ts).
      const truncated =
        build.root === "."
          ? `, log truncated through ${await truncatedThrough(server.url, ins.cluster)}`
          : "";
      const bulk = await bulkUpdate(server.url);
      // This checkout can also ship the UPDATE as its rows (the baseline cannot).
      if (build.root === ".") {
        const asRows = await bulkUpdate(server.url, { replicate_statement_min_rows: 0 });
        out.rowsMs.push(Math.round(asRows.ms));
        out.rowsBytes.push(asRows.bytes);
      }
      out.perSecond.push(ins.perSecond);
      out.p50.push(ins.p50);
      out.bulkMs.push(Math.round(bulk.ms));
      out.bulkBytes.push(bulk.bytes);
      process.stderr.write(
        `${ins.perSecond} inserts/s, p50 ${ins.p50} ms${truncated}; UPDATE ${bulkRows} rows ${Math.round(bulk.ms)} ms, ${bulk.bytes} log bytes\n`,
      );
    } finally {
      await server.stop();
    }
  }
}

const [base, mine] = results;
if (base === undefined || mine === undefined) throw new Error("no results");
const ratio = (a: number, b: number) => (b === 0 ? "–" : `${(a / b).toFixed(2)}x`);
const rows: [string, number, number][] = [
  [
    `single-row inserts/s (${values.clients} clients, 4 replicas)`,
    median(base.perSecond),
    median(mine.perSecond),
  ],
  ["insert p50 (ms)", median(base.p50), median(mine.p50)],
  [`UPDATE of ${bulkRows} rows, commit latency (ms)`, median(base.bulkMs), median(mine.bulkMs)],
  [`UPDATE of ${bulkRows} rows, log bytes`, median(base.bulkBytes), median(mine.bulkBytes)],
  [
    `UPDATE of ${bulkRows} rows shipped as rows (replicate_statement_min_rows 0), latency (ms)`,
    median(base.bulkMs),
    median(mine.rowsMs),
  ],
  [`... and its log bytes`, median(base.bulkBytes), median(mine.rowsBytes)],
];
console.log(`\n| measure | baseline ${values.baseline} | this checkout | this / baseline |`);
console.log("| --- | --- | --- | --- |");
for (const [name, a, b] of rows) console.log(`| ${name} | ${a} | ${b} | ${ratio(b, a)} |`);
console.log(`\n${repeats} alternating repeats, medians; ${seconds} s per insert run.`);
