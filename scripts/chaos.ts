/**
 * The randomized fault run against a real `wrangler dev` (started here, with
 * fresh storage, as the benchmarks do; or --url for one already running with
 * `npm start`): concurrent clients over HTTP with Idempotency-Keys and retries
 * on unknown outcomes, master crashes, replica stops, crashes and partitions,
 * and lost, late, duplicated and reordered relay messages. Then every fault is
 * healed, the history checker runs, and the linearizability checker judges the
 * register keys. Exits 1 unless nothing was lost, duplicated or stale, every
 * replica recovered, and every register key is linearizable.
 *
 *   npm run chaos -- --seconds 120 --seed 1 [--clients 8] [--fault-every 1000] [--url URL]
 *                    [--tunables '{"debug_ack_delay_ms": 30}']   (over the chaos defaults)
 *
 * Every run writes its register history, in the shape Jepsen's tools read
 * (core/register-history.ts), to .wrangler/chaos/history-<seed>.json. A failing
 * run prints its seed and writes its whole history to a JSON file too: the seed
 * replays the same decisions (operations, faults, each message's fate).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { passed, summarize } from "../test/chaos-report";
import { CHAOS_MESSAGES, CHAOS_TUNABLES, type Endpoint, runChaos } from "../test/chaos-workload";
import { type DevServer, startDevServer } from "../test/e2e/dev-server";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "60" },
    seed: { type: "string" },
    clients: { type: "string", default: "8" },
    "fault-every": { type: "string", default: "1000" },
    url: { type: "string" },
    cluster: { type: "string" },
    tunables: { type: "string", default: "{}" },
  },
});

const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const seconds = Number(values.seconds);
if (!Number.isInteger(seed) || seed < 0 || !(seconds > 0)) {
  console.error("usage: npm run chaos -- --seconds N --seed S (a non-negative integer)");
  process.exit(2);
}
const log = (line: string) => process.stderr.write(`${line}\n`);

let server: DevServer | null = null;
let base = values.url?.replace(/\/$/, "");
if (base === undefined) {
  log("starting wrangler dev ...");
  server = await startDevServer("wrangler.toml");
  base = server.url;
}
/** The typed client over HTTP; an attempt without an answer in 30 s counts as no answer. */
const endpoint: Endpoint = {
  url: base,
  token: "dev-data-token",
  adminToken: "dev-admin-token",
  attemptTimeoutMs: 30_000,
};

let exitCode = 1;
try {
  const report = await runChaos({
    cluster: values.cluster ?? `chaos-${seed}-${Date.now().toString(36)}`,
    seed,
    clients: Number(values.clients),
    maxOps: Number.POSITIVE_INFINITY,
    seconds,
    faultEveryMs: Number(values["fault-every"]),
    masterCrashes: true,
    replicaStops: true,
    replicaCrashes: true,
    partitions: true,
    promotions: true,
    masterLosses: true,
    messages: CHAOS_MESSAGES,
    tunables: { ...CHAOS_TUNABLES, ...(JSON.parse(values.tunables) as Record<string, unknown>) },
    convergeMs: 60_000,
    endpoint,
    log,
  });
  for (const line of summarize(report)) console.log(line);
  mkdirSync(".wrangler/chaos", { recursive: true });
  const historyFile = `.wrangler/chaos/history-${seed}.json`;
  // One event a line: easy to grep, and still one JSON array.
  const lines = report.registers.events.map((event) => JSON.stringify(event));
  writeFileSync(historyFile, `[\n${lines.join(",\n")}\n]\n`);
  console.log(`register history (Jepsen's shape, see docs/operations.md): ${historyFile}`);
  if (passed(report)) {
    exitCode = 0;
    console.log("PASS");
  } else {
    const file = join(tmpdir(), `chaos-${seed}-${Date.now()}.json`);
    const { history, registers, ...findings } = report;
    writeFileSync(file, JSON.stringify({ ...findings, events: history.events }, null, 1));
    const c = report.check;
    for (const [name, list] of Object.entries({
      lost: c.lost,
      duplicated: c.duplicated,
      staleReads: c.staleReads,
      failedPresent: c.failedPresent,
      diverged: c.diverged,
      unexpected: c.unexpected,
      unrecovered: report.unrecovered,
    })) {
      for (const item of list.slice(0, 10)) console.log(`  ${name}: ${item}`);
      if (list.length > 10) console.log(`  ${name}: ... ${list.length - 10} more`);
    }
    console.log(`FAIL: seed ${seed}; history in ${file}`);
    const extra = values.tunables === "{}" ? "" : ` --tunables '${values.tunables}'`;
    console.log(`reproduce: npm run chaos -- --seconds ${seconds} --seed ${seed}${extra}`);
  }
} catch (error) {
  console.error(`chaos run aborted (seed ${seed}):`, error);
} finally {
  await server?.stop();
}
process.exit(exitCode);
