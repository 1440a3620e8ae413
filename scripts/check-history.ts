/**
 * Checks a register history file (core/register-history.ts, as `npm run chaos`
 * writes it) for linearizability, key by key, and prints the verdicts and the
 * explanation of any key that fails. Exits 1 unless every key is linearizable.
 *
 *   npm run check:history -- .wrangler/chaos/history-1.json [--max-steps 1000000]
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { checkLinearizability, describeReport } from "../core/linearizability";
import { operationsFromHistory, parseHistory } from "../core/register-history";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { "max-steps": { type: "string" } },
});
const file = positionals[0];
if (file === undefined || positionals.length > 1) {
  console.error("usage: npm run check:history -- FILE [--max-steps N]");
  process.exit(2);
}
const maxSteps = values["max-steps"] === undefined ? undefined : Number(values["max-steps"]);
const events = parseHistory(JSON.parse(readFileSync(file, "utf8")));
const report = checkLinearizability(
  operationsFromHistory(events),
  maxSteps === undefined ? {} : { maxSteps },
);
for (const line of describeReport(report)) console.log(line);
process.exit(report.linearizable === true ? 0 : 1);
