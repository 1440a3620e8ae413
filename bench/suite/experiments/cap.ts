/**
 * Seed experiment 5: the cap on handed-off commits
 * (async_dist_commit_max_outstanding) at 500 and 1000 clients; a commit that
 * does not fit waits inline holding its writer slot (inlineWaits.queueFull).
 */
import { type ChartSpec, lineChart } from "../charts.ts";
import { type Context, med, runsPhrase } from "../context.ts";
import { DRIVER_LABEL, type DriverName } from "../load.ts";
import { type PointSpec, type Sample, runPoints } from "../measure.ts";
import type { ExperimentReport } from "../report.ts";
import { SEED_SETUP, seedCap } from "../seed.ts";
import { int } from "../table.ts";

export function caps(full: boolean): number[] {
  return full ? [128, 256, 512, 1024, 2048] : [128, 512, 2048];
}

export function clientCounts(full: boolean, driver: DriverName): number[] {
  if (full) return driver === "in-runtime" ? [500, 1000] : [500];
  return driver === "in-runtime" ? [500] : [];
}

const key = (driver: DriverName, clients: number, cap: number) => `${driver}|c${clients}|cap${cap}`;

export async function run(ctx: Context): Promise<ExperimentReport> {
  const cluster = await ctx.topologies.get(4);
  const points: PointSpec[] = [];
  for (const driver of ctx.drivers) {
    for (const clients of clientCounts(ctx.full, driver)) {
      for (const cap of caps(ctx.full)) {
        points.push({
          key: key(driver, clients, cap),
          label: `4 replicas, ${clients} clients, waiter on, cap ${cap}`,
          driver,
          cluster,
          clients,
          tunables: { async_dist_commit_max_outstanding: cap },
        });
      }
    }
  }
  return report(
    await runPoints(ctx.settings, "5", points),
    ctx.drivers,
    ctx.full,
    runsPhrase(ctx.settings),
  );
}

export function report(
  samples: Map<string, Sample[]>,
  drivers: DriverName[],
  full: boolean,
  runs: string,
): ExperimentReport {
  const rows: string[][] = [];
  const chartPoints = [];
  for (const driver of drivers) {
    for (const clients of clientCounts(full, driver)) {
      for (const cap of caps(full)) {
        const list = samples.get(key(driver, clients, cap));
        const rate = med(list, (s) => s.insertsPerSecond);
        const seed = seedCap[clients]?.[cap];
        rows.push([
          DRIVER_LABEL[driver],
          String(clients),
          String(cap),
          int(rate),
          int(med(list, (s) => s.inlineWaits.queueFull)),
          `${int(med(list, (s) => s.p50Ms))} / ${int(med(list, (s) => s.p99Ms))} ms`,
          seed === undefined
            ? "–"
            : `${int(seed.rate)}${seed.inline === undefined ? "" : ` (${seed.inline})`}`,
        ]);
        chartPoints.push({ x: cap, y: rate, series: `${clients} clients, ${driver}` });
      }
    }
  }
  const charts: ChartSpec[] = [
    lineChart({
      file: "exp5-cap.svg",
      title: "Cap sweep (async_dist_commit_max_outstanding)",
      xTitle: "cap",
      yTitle: "inserts / s",
      points: chartPoints,
    }),
  ];
  const skipped = drivers.filter((d) => clientCounts(full, d).length === 0);
  return {
    id: "5",
    title: "Cap on handed-off commits",
    summary: `Only the cap changes. Inline waits are commits that found the waiter full (status master.waiter.inlineWaits.queueFull) during the measured run and its warm-up.${skipped.length > 0 ? ` Not run in quick mode with: ${skipped.map((d) => DRIVER_LABEL[d]).join(", ")}.` : ""}`,
    tables: [
      {
        caption: `4 replicas, waiter on, ${runs}. Seed: ${SEED_SETUP}, inline waits per run in brackets.`,
        headers: [
          "driver",
          "clients",
          "cap",
          "inserts/s",
          "inline waits (queue full)",
          "p50 / p99",
          "seed inserts/s (inline waits)",
        ],
        rows,
      },
    ],
    charts,
    targets: [],
  };
}
