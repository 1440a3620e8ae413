/**
 * Rewrites the generated tables in docs/ from the code: the tunables table in
 * operations.md and the deterministic functions in determinism.md. `npm run docs:tables`;
 * test/docs.test.ts fails when they drift.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { DETERMINISTIC_FUNCTIONS } from "../core/sql-program";
import { defaultTunables, describeTunables } from "../core/tunables";

function replaceTable(path: string, header: string, rows: string[]): void {
  const lines = readFileSync(path, "utf8").split("\n");
  const start = lines.findIndex((line) => line.replace(/\s+/g, " ").startsWith(header));
  if (start < 0) throw new Error(`${path}: no table starting with ${header}`);
  let end = start;
  while (lines[end]?.startsWith("|")) end++;
  const cells = header.split("|").length - 2;
  const rule = `|${" --- |".repeat(cells)}`;
  lines.splice(start, end - start, header, rule, ...rows);
  writeFileSync(path, lines.join("\n"));
}

const tunables = Object.entries(describeTunables(defaultTunables())).map(
  ([name, t]) =>
    `| \`${name}\` | ${t.type === "enum" ? (t.values ?? []).join(" / ") : t.type} | ${t.default} | ${t.min ?? "–"} | ${t.max ?? "–"} | ${t.description} |`,
);
replaceTable("docs/operations.md", "| name | type | default | min | max | meaning |", tunables);

const functions = [...DETERMINISTIC_FUNCTIONS].sort().map((name) => `| \`${name}\` |`);
replaceTable("docs/determinism.md", "| deterministic function |", functions);
console.log("docs tables rewritten");
