/** What an experiment hands back: tables, charts and target checks, all plain data. */
import type { ChartSpec } from "./charts.ts";
import type { DriverName } from "./load.ts";
import type { Table } from "./table.ts";

export interface TargetCheck {
  /** The target as the issue states it. */
  target: string;
  driver: DriverName;
  /** What was measured, with whatever must be printed beside it (such as the effective ack delay). */
  measured: string;
  pass: boolean;
}

export interface ExperimentReport {
  /** The seed's experiment number. */
  id: string;
  title: string;
  /** How it was run (drivers, points, repeats), and what the seed measured. */
  summary: string;
  tables: Table[];
  charts: ChartSpec[];
  targets: TargetCheck[];
}

export function passLabel(pass: boolean): string {
  return pass ? "PASS" : "FAIL";
}
