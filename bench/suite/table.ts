/**
 * Markdown tables and number formats for the console and docs/benchmarks.md.
 * Tables come out column-aligned as the repository's formatter writes them, so a
 * regenerated page has no formatting diff.
 */

export interface Table {
  /** A sentence above the table: what was measured, with which driver and how often. */
  caption: string;
  headers: string[];
  rows: string[][];
}

const DASH = "–";

/** A count with thousands separators; a dash when not measured. */
export function int(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString("en-US") : DASH;
}

/** A ratio as "5.95x". */
export function times(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(2)}x` : DASH;
}

/** A share as "96%". */
export function percent(value: number): string {
  return Number.isFinite(value) ? `${Math.round(value * 100)}%` : DASH;
}

/** Milliseconds, one decimal below 10 ms. */
export function ms(value: number): string {
  if (!Number.isFinite(value)) return DASH;
  return value < 10 ? `${value.toFixed(1)} ms` : `${Math.round(value).toLocaleString("en-US")} ms`;
}

/** Seconds with one decimal; a dash when the event never happened. */
export function seconds(value: number | null): string {
  return value === null || !Number.isFinite(value) ? DASH : `${value.toFixed(1)} s`;
}

function cell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("\n", " ");
}

/** A markdown table with every column padded to its widest cell (at least 3). */
export function renderTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  const all = [headers, ...rows].map((row) => headers.map((_, i) => cell(row[i] ?? "")));
  const widths = headers.map((_, i) => Math.max(3, ...all.map((row) => (row[i] ?? "").length)));
  const line = (row: readonly string[]) =>
    `| ${row.map((text, i) => text.padEnd(widths[i] ?? 3)).join(" | ")} |`;
  const [head, ...body] = all;
  return [line(head ?? []), line(widths.map((w) => "-".repeat(w))), ...body.map(line)].join("\n");
}

/** The caption, a blank line, then the table. */
export function renderCaptioned(table: Table): string {
  return `${table.caption}\n\n${renderTable(table.headers, table.rows)}`;
}
