/**
 * What the guard and the divergence check cost per statement (bench/cost-probe.ts):
 * each operation runs n times inside one Durable Object call, timed from here
 * and less an empty call, alternating operations so machine drift spreads
 * over all of them; medians of the repeats. Times are the object's thread,
 * one single-row INSERT each. Operations run inside one transaction that the
 * runtime commits to storage after the call, but for `commit-turns`, whose
 * commits each get a turn of their own and so a storage commit of their own,
 * as a request's does: its difference is what that storage commit costs.
 *
 *   npm run bench:costs -- [--n 3000] [--repeats 7]
 */
import { parseArgs } from "node:util";
import type { CostOp } from "./cost-types.ts";
import { startBenchServer } from "./suite/server.ts";
import { benchState, describeState } from "./suite/state-dir.ts";
import { median } from "./suite/stats.ts";

const { values } = parseArgs({
  options: {
    n: { type: "string", default: "3000" },
    repeats: { type: "string", default: "7" },
  },
});
const n = Number(values.n);
const repeats = Number(values.repeats);
if (!(n > 0) || !(repeats > 0)) throw new Error("--n and --repeats must be positive");

const server = await startBenchServer();
const object = String(Date.now());

async function call(op: CostOp, count: number): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.url}/bench/costs`, {
    method: "POST",
    body: JSON.stringify({ object, op, n: count }),
  });
  const text = await response.text();
  const elapsed = performance.now() - started;
  if (!response.ok) throw new Error(`${op}: ${response.status} ${text.slice(0, 300)}`);
  const done = (JSON.parse(text) as { done: number }).done;
  if (done !== count && op !== "none") throw new Error(`${op}: ran ${done} of ${count}`);
  return elapsed;
}

const timed: CostOp[] = [
  "bare",
  "guarded",
  "explain",
  "captured",
  "commit",
  "turns",
  "commit-turns",
  "apply-fast",
  "apply-checked",
];
const samples = new Map<CostOp, number[]>(timed.map((op) => [op, []]));
try {
  // Warm-up: compiled statements, the schema cache and the JIT.
  for (const op of ["bare", "guarded", "explain", "captured", "commit"] as const)
    await call(op, 200);
  for (const kind of ["fast", "checked"] as const) {
    await call(`prepare-${kind}`, 200);
    await call(`apply-${kind}`, 200);
  }
  for (let r = 0; r < repeats; r++) {
    const empty = await call("none", 0);
    for (const op of r % 2 === 0 ? timed : [...timed].reverse()) {
      if (op === "apply-fast") await call("prepare-fast", n);
      if (op === "apply-checked") await call("prepare-checked", n);
      const ms = (await call(op, n)) - empty;
      samples.get(op)?.push((ms * 1000) / n);
    }
    const last = timed.map((op) => `${op} ${samples.get(op)?.at(-1)?.toFixed(1)}`);
    process.stderr.write(`  repeat ${r + 1} of ${repeats} (µs each): ${last.join(", ")}\n`);
  }
} finally {
  await server.stop();
}

const us = (op: CostOp) => median(samples.get(op) ?? []);
const fmt = (value: number) => value.toFixed(1);
const rows: [string, number][] = [
  ["the INSERT alone (no guard, no capture)", us("bare")],
  [
    "guard on a repeated text (lexer, binding, cached program facts, policy)",
    us("guarded") - us("bare"),
  ],
  ["guard on a new text (EXPLAIN and its analysis added)", us("explain") - us("bare")],
  [
    "row capture on the master (capture triggers, DELETE ... RETURNING; a digest only where a foreign key joins)",
    us("captured") - us("guarded"),
  ],
  ["the master's whole statement path", us("captured")],
  ["the log record and the saved result of a keyed commit", us("commit") - us("captured")],
  ["the master's whole local commit (statement, record, result, transaction)", us("commit")],
  [
    "the storage commit of that transaction, made on a turn of its own as a request's is",
    us("commit-turns") - us("turns") - us("commit"),
  ],
  ["replica applies the rows, each UPDATE/DELETE must hit (no foreign key)", us("apply-fast")],
  ["replica applies the rows with capture and digest (foreign-key tables)", us("apply-checked")],
];
console.log("\n| per single-row INSERT | µs |\n| --- | --- |");
for (const [label, value] of rows) console.log(`| ${label} | ${fmt(value)} |`);
console.log(
  `\n${repeats} alternating repeats of ${n} statements each, medians; the thread of one Durable Object; ${describeState(benchState())}.`,
);
