/**
 * The waiter's targets, measured side by side in one run (4 replicas, each
 * client with one insert in flight, in-runtime driver):
 *   A. ack delay 100 ms, 64 clients: waiter on / off (target >= 6x; bound 8x)
 *   B. ack delay 100 ms, 256 clients: on, as a share of its own no-delay throughput (>= 70%)
 *   C. no delay, 64 clients: on / off (>= 1.3x)
 * On and off runs alternate, so machine drift cancels; every row shows the
 * effective ack delay the master measured (mean batch round trip).
 * `npm run bench` checks the same targets as part of the seed's experiments.
 *
 *   node bench/waiter.ts [--seconds 8] [--warmup 2] [--repeats 2] [--delay 100] [--window N]
 */
import { parseArgs } from "node:util";
import { DosqliteClient } from "../client/index.ts";
import { startBenchServer } from "./suite/server.ts";
import { median } from "./suite/stats.ts";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "8" },
    warmup: { type: "string", default: "2" },
    repeats: { type: "string", default: "2" },
    delay: { type: "string", default: "100" },
    window: { type: "string" },
  },
});
const seconds = Number(values.seconds);
const warmup = Number(values.warmup);
const repeats = Number(values.repeats);
const delay = Number(values.delay);

interface Run {
  label: string;
  on: boolean;
  delayMs: number;
  clients: number;
  insertsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  /** Mean batch round trip the master measured. */
  ackRttMs: number;
  /** Mean time replicas held each ack on purpose (debug_ack_delay_ms as it really was). */
  effectiveAckMs: number;
  inlineWaits: number;
  passes: number;
  checkedPerPass: number;
  answeredPerPass: number;
  skippedEarlyStop: number;
}

const server = await startBenchServer();
/** The admin plane of one run's cluster, through the typed client. */
const adminOf = (cluster: string) =>
  new DosqliteClient({ url: server.url, cluster, adminToken: "dev-admin-token" }).admin;
let runNumber = 0;

async function json<T>(response: Response): Promise<T> {
  const text = await response.text();
  if (!response.ok) throw new Error(`${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

interface StatusBody {
  master: {
    waiter: {
      inlineWaits: { off: number; queueFull: number; notPlain: number };
      passes: number;
      checked: number;
      answered: number;
      skippedEarlyStop: number;
    };
  };
  replicas: { ackRttCount: number; ackRttTotalMs: number; ackDelayTotalMs: number }[];
}

async function status(cluster: string): Promise<StatusBody> {
  return adminOf(cluster).status();
}

async function run(label: string, on: boolean, delayMs: number, clients: number): Promise<Run> {
  runNumber++;
  const cluster = `bench-${Date.now().toString(36)}-${runNumber}`;
  await adminOf(cluster).patchTunables({
    async_dist_commit: on,
    debug_ack_delay_ms: delayMs,
    ...(values.window === undefined ? {} : { relay_window: Number(values.window) }),
  });
  // Settings reach the replicas with the next message; heartbeats go every 100 ms.
  await new Promise((r) => setTimeout(r, 400));
  process.stderr.write(`  ${label} ${on ? "on " : "off"} delay=${delayMs} clients=${clients} ... `);
  const before = await status(cluster);
  const result = await json<{
    insertsPerSecond: number;
    p50Ms: number;
    p99Ms: number;
    errors: number;
  }>(
    await fetch(`${server.url}/bench/run`, {
      method: "POST",
      body: JSON.stringify({
        cluster,
        clients,
        seconds,
        warmupSeconds: warmup,
        tag: `r${runNumber}`,
      }),
    }),
  );
  const after = await status(cluster);
  const sum = (s: StatusBody, k: "ackRttCount" | "ackRttTotalMs" | "ackDelayTotalMs") =>
    s.replicas.reduce((acc, r) => acc + r[k], 0);
  const count = sum(after, "ackRttCount") - sum(before, "ackRttCount");
  const total = sum(after, "ackRttTotalMs") - sum(before, "ackRttTotalMs");
  const held = sum(after, "ackDelayTotalMs") - sum(before, "ackDelayTotalMs");
  const inline = (s: StatusBody) => {
    const w = s.master.waiter.inlineWaits;
    return w.off + w.queueFull + w.notPlain;
  };
  const row: Run = {
    label,
    on,
    delayMs,
    clients,
    insertsPerSecond: result.insertsPerSecond,
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms,
    errors: result.errors,
    ackRttMs: count === 0 ? 0 : Math.round((total / count) * 10) / 10,
    effectiveAckMs: count === 0 ? 0 : Math.round((held / count) * 10) / 10,
    inlineWaits: inline(after) - inline(before),
    ...passCost(before, after),
  };
  process.stderr.write(
    `${row.insertsPerSecond}/s p50 ${row.p50Ms} ms, ack held ${row.effectiveAckMs} ms, rtt ${row.ackRttMs} ms, errors ${row.errors}\n`,
  );
  return row;
}

/** What the waiter's passes cost during a run: commits examined and answered per pass. */
function passCost(before: StatusBody, after: StatusBody) {
  const d = (k: "passes" | "checked" | "answered" | "skippedEarlyStop") =>
    after.master.waiter[k] - before.master.waiter[k];
  const passes = d("passes");
  const per = (n: number) => (passes === 0 ? 0 : Math.round((n / passes) * 100) / 100);
  return {
    passes,
    checkedPerPass: per(d("checked")),
    answeredPerPass: per(d("answered")),
    skippedEarlyStop: d("skippedEarlyStop"),
  };
}

const runs: Run[] = [];
try {
  for (let r = 1; r <= repeats; r++) {
    process.stderr.write(`repeat ${r}/${repeats}\n`);
    runs.push(await run("A", true, delay, 64));
    runs.push(await run("A", false, delay, 64));
    runs.push(await run("B", true, delay, 256));
    runs.push(await run("B", true, 0, 256));
    runs.push(await run("C", true, 0, 64));
    runs.push(await run("C", false, 0, 64));
  }
} finally {
  await server.stop();
}

const pick = (label: string, on: boolean, delayMs: number) =>
  runs.filter((x) => x.label === label && x.on === on && x.delayMs === delayMs);
const med = (rows: Run[], k: keyof Run) => median(rows.map((x) => Number(x[k])));
const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 100) / 100);

const aOn = pick("A", true, delay);
const aOff = pick("A", false, delay);
const bDelay = pick("B", true, delay);
const bNoDelay = pick("B", true, 0);
const cOn = pick("C", true, 0);
const cOff = pick("C", false, 0);

// The targets of `npm run bench` (late-acks.ts, off-on.ts), which checks them with PASS lines.
const lines = [
  "| experiment | on inserts/s | off / baseline inserts/s | ratio | target | effective ack (on / off) | p50 on / off ms |",
  "| --- | --- | --- | --- | --- | --- | --- |",
  `| A: ack delay ${delay} ms, 64 clients, on vs off | ${med(aOn, "insertsPerSecond")} | ${med(aOff, "insertsPerSecond")} | ${ratio(med(aOn, "insertsPerSecond"), med(aOff, "insertsPerSecond"))}x | >= 7.6x | ${med(aOn, "effectiveAckMs")} / ${med(aOff, "effectiveAckMs")} ms | ${med(aOn, "p50Ms")} / ${med(aOff, "p50Ms")} |`,
  `| B: 256 clients, on, ack delay ${delay} ms vs none | ${med(bDelay, "insertsPerSecond")} | ${med(bNoDelay, "insertsPerSecond")} | ${Math.round(ratio(med(bDelay, "insertsPerSecond"), med(bNoDelay, "insertsPerSecond")) * 100)}% | >= 90% | ${med(bDelay, "effectiveAckMs")} / ${med(bNoDelay, "effectiveAckMs")} ms | ${med(bDelay, "p50Ms")} / ${med(bNoDelay, "p50Ms")} |`,
  `| C: no delay, 64 clients, on vs off | ${med(cOn, "insertsPerSecond")} | ${med(cOff, "insertsPerSecond")} | ${ratio(med(cOn, "insertsPerSecond"), med(cOff, "insertsPerSecond"))}x | >= 1.3x | ${med(cOn, "effectiveAckMs")} / ${med(cOff, "effectiveAckMs")} ms | ${med(cOn, "p50Ms")} / ${med(cOff, "p50Ms")} |`,
];
console.log(
  `\nWaiter targets: 4 replicas, in-runtime driver, medians of ${repeats} alternating runs of ${seconds} s (after ${warmup} s warm-up)\n`,
);
console.log(lines.join("\n"));
const cost = [
  "",
  "Pass cost (waiter on; per pass: commits examined, commits answered, and skipped by early stop in the run):",
  "| run | passes | examined / pass | answered / pass | skipped by early stop |",
  "| --- | --- | --- | --- | --- |",
  ...[...aOn, ...bDelay, ...cOn].map(
    (x) =>
      `| ${x.label} delay ${x.delayMs} ms, ${x.clients} clients | ${x.passes} | ${x.checkedPerPass} | ${x.answeredPerPass} | ${x.skippedEarlyStop} |`,
  ),
];
console.log(cost.join("\n"));
console.log(`\nAll runs:\n${JSON.stringify(runs)}`);
