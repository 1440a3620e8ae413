/**
 * The benchmark suite: every experiment of the Comdb2 seed, against a local
 * cluster it starts itself (wrangler dev with wrangler.bench.toml, no network).
 *
 *   npm run bench                 quick pass: fewer points; the experiments whose targets
 *                                 are checked (1, 3, L) 3 alternating repeats, the rest 1
 *   npm run bench -- --full       every point, 3 repeats of 4 s after 1 s of warm-up
 *   options: --only 1,3,L,6  --drivers http,in-runtime  --seconds N  --warmup N  --repeats N
 *            --no-docs (do not rewrite docs/benchmarks.md)  --strict (exit 1 if a target fails)
 *
 * Prints one line per point while it runs, a table per experiment, the target
 * checks, and (when every experiment ran) rewrites the generated part of
 * docs/benchmarks.md with SVG charts in docs/benchmarks/.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { renderSvg } from "./suite/charts.ts";
import type { Context } from "./suite/context.ts";
import {
  renderConsole,
  renderGenerated,
  renderTargetsConsole,
  spliceGenerated,
} from "./suite/doc.ts";
import * as catchup from "./suite/experiments/catchup.ts";
import * as cap from "./suite/experiments/cap.ts";
import * as crash from "./suite/experiments/crash.ts";
import * as lateAcks from "./suite/experiments/late-acks.ts";
import * as latency from "./suite/experiments/latency.ts";
import * as offOn from "./suite/experiments/off-on.ts";
import * as writers from "./suite/experiments/writers.ts";
import type { DriverName } from "./suite/load.ts";
import { describeMachine, readMachine } from "./suite/machine.ts";
import type { ExperimentReport } from "./suite/report.ts";
import { startBenchServer } from "./suite/server.ts";
import { Topologies } from "./suite/topology.ts";

/** `targets`: the experiment checks targets (C, A and B, the latency targets). */
const EXPERIMENTS: {
  id: string;
  run: (ctx: Context) => Promise<ExperimentReport>;
  targets: boolean;
}[] = [
  { id: "1", run: offOn.run, targets: true },
  { id: "2", run: writers.run, targets: false },
  { id: "3", run: lateAcks.run, targets: true },
  { id: "L", run: latency.run, targets: true },
  { id: "5", run: cap.run, targets: false },
  { id: "6", run: crash.run, targets: false },
  { id: "7", run: catchup.run, targets: false },
];
/**
 * Repeats of the target experiments in the quick pass: a verdict on one run
 * of 2 s flipped between runs of the same build (B: 93% in one, 78% in the
 * median of three), so even the quick pass takes the median of three.
 */
const QUICK_TARGET_REPEATS = 3;

const DOC = "docs/benchmarks.md";
const CHART_DIR = "benchmarks";

const args = process.argv.slice(2);
const { values } = parseArgs({
  args,
  options: {
    full: { type: "boolean", default: false },
    only: { type: "string" },
    drivers: { type: "string", default: "in-runtime,http" },
    seconds: { type: "string" },
    warmup: { type: "string" },
    repeats: { type: "string" },
    "no-docs": { type: "boolean", default: false },
    strict: { type: "boolean", default: false },
  },
});
const full = values.full;
const only = values.only?.split(",").map((s) => s.trim());
const selected = EXPERIMENTS.filter((e) => only === undefined || only.includes(e.id));
const drivers = values.drivers.split(",").map((s) => s.trim()) as DriverName[];
for (const d of drivers) {
  if (d !== "http" && d !== "in-runtime") throw new Error(`unknown driver ${d}`);
}
// Full mode's points are short so that every experiment fits in about an hour
// here; the repeats, alternating on and off, are what steady the ratios.
const seconds = Number(values.seconds ?? (full ? 4 : 2));
const warmupSeconds = Number(values.warmup ?? 1);
const repeats = Number(values.repeats ?? (full ? 3 : 1));
const targetRepeats = Number(values.repeats ?? (full ? 3 : QUICK_TARGET_REPEATS));
const log = (line: string) => process.stderr.write(`${line}\n`);

const startedAt = Date.now();
const machine = readMachine();
log(`machine: ${describeMachine(machine)}`);
log(
  `${full ? "full" : "quick"} run: experiments ${selected.map((e) => e.id).join(", ")}; drivers ${drivers.join(", ")}`,
);
const server = await startBenchServer();
log(`wrangler dev ready at ${server.url} after ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);

const reports: ExperimentReport[] = [];
const failures: string[] = [];
try {
  const topologies = new Topologies(server.url, Date.now().toString(36), log);
  const ctx: Context = {
    url: server.url,
    full,
    drivers,
    topologies,
    log,
    settings: {
      url: server.url,
      seconds,
      warmupSeconds,
      repeats,
      baseTunables: await topologies.baseTunables(),
      log,
    },
  };
  for (const experiment of selected) {
    const began = Date.now();
    try {
      const settings = {
        ...ctx.settings,
        repeats: experiment.targets ? targetRepeats : repeats,
      };
      const report = await experiment.run({ ...ctx, settings });
      reports.push(report);
      console.log(renderConsole(report));
      log(`experiment ${experiment.id} took ${((Date.now() - began) / 1000).toFixed(0)} s`);
    } catch (error) {
      failures.push(`experiment ${experiment.id}: ${String(error)}`);
      log(
        `experiment ${experiment.id} failed: ${error instanceof Error ? error.stack : String(error)}`,
      );
    }
  }
} finally {
  await server.stop();
}

const durationSeconds = (Date.now() - startedAt) / 1000;
console.log(`\n== Targets ==\n\n${renderTargetsConsole(reports)}`);
console.log(`\nTook ${durationSeconds.toFixed(0)} s.`);
const raw = join(tmpdir(), `dosql-bench-${Date.now()}.json`);
writeFileSync(raw, JSON.stringify({ machine, args, reports }, null, 2));
log(`raw results: ${raw}`);

const complete = selected.length === EXPERIMENTS.length && failures.length === 0;
if (values["no-docs"]) {
  log(`${DOC} left as it is (--no-docs)`);
} else if (!complete) {
  log(`${DOC} left as it is: only a full set of experiments rewrites it`);
} else {
  const modeText = full
    ? `full mode: ${repeats} repeats of ${seconds} s after ${warmupSeconds} s of warm-up per point`
    : `quick mode: fewer points than --full, ${seconds} s after ${warmupSeconds} s of warm-up per run; the experiments that check targets (1, 3, L) take the median of ${targetRepeats} runs per point, in alternating order, the others ${repeats === 1 ? "a single run" : `the median of ${repeats}`}`;
  const command = `npm run bench${args.length > 0 ? ` -- ${args.join(" ")}` : ""}`;
  const generated = renderGenerated(
    {
      command,
      date: `${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC`,
      machine: describeMachine(machine),
      mode: modeText,
      durationSeconds,
    },
    reports,
    CHART_DIR,
  );
  const dir = join("docs", CHART_DIR);
  mkdirSync(dir, { recursive: true });
  for (const file of readdirSync(dir)) {
    if (/^exp\d.*\.svg$/.test(file)) rmSync(join(dir, file));
  }
  for (const chart of reports.flatMap((r) => r.charts)) {
    writeFileSync(join(dir, chart.file), await renderSvg(chart));
  }
  writeFileSync(DOC, spliceGenerated(readFileSync(DOC, "utf8"), generated));
  execFileSync("npx", ["biome", "format", "--write", DOC], { stdio: "ignore" });
  log(`${DOC} and ${dir}/*.svg rewritten`);
}
if (failures.length > 0) {
  log(`failed: ${failures.join("; ")}`);
  process.exitCode = 1;
} else if (values.strict && reports.some((r) => r.targets.some((t) => !t.pass))) {
  process.exitCode = 1;
}
