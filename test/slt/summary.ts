/** A run's report as text: one line of counts per file, then the skips by limit and the failures. */
import type { Failure, FileReport } from "./run";

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** A record's SQL on one line, cut to a readable length. */
function oneLine(sql: string, max = 160): string {
  const flat = sql.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max)}...` : flat;
}

/** Result lines side by side on one line, the first few of a long result. */
function values(lines: readonly string[], max = 24): string {
  const shown = lines.slice(0, max).join(" | ");
  return lines.length > max ? `${shown} | ... (${lines.length} lines)` : shown;
}

function describeFailure(failure: Failure): string[] {
  const lines = [`  line ${failure.line}: ${failure.what}`];
  if (failure.sql !== "") lines.push(`    ${oneLine(failure.sql)}`);
  if (failure.expected !== undefined) lines.push(`    expected: ${values(failure.expected)}`);
  if (failure.got !== undefined) lines.push(`    got:      ${values(failure.got)}`);
  return lines;
}

export function skippedByLimitTotal(report: FileReport): number {
  return Object.values(report.skippedByLimit).reduce((sum, n) => sum + n, 0);
}

export function summarize(report: FileReport): string {
  const { timing } = report;
  const lines = [
    `${report.file}: ${report.records} records, ${report.passed} passed, ` +
      `${skippedByLimitTotal(report)} skipped by limit, ${report.skippedForEngine} for other engines, ` +
      `${report.failed} failed; ${seconds(report.durationMs)} ` +
      `(${timing.statements} statements ${seconds(timing.statementMs)}, ` +
      `${timing.queries} queries ${seconds(timing.queryMs)})`,
  ];
  for (const [limit, count] of Object.entries(report.skippedByLimit)) {
    lines.push(`  skipped by limit ${limit}: ${count}`);
  }
  if (report.haltedAt !== undefined) lines.push(`  halted at line ${report.haltedAt}`);
  for (const failure of report.failures) lines.push(...describeFailure(failure));
  if (report.failed > report.failures.length) {
    lines.push(`  ... and ${report.failed - report.failures.length} more failures`);
  }
  return lines.join("\n");
}
