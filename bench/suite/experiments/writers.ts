/** Seed experiment 2: writer_concurrency 8 / 16 / 32 with the waiter on (4 replicas). */
import { type ChartSpec, lineChart } from "../charts.ts";
import { type Context, med, runsPhrase } from "../context.ts";
import { DRIVER_LABEL, type DriverName } from "../load.ts";
import { type PointSpec, type Sample, runPoints } from "../measure.ts";
import type { ExperimentReport } from "../report.ts";
import { SEED_SETUP, seedWriters } from "../seed.ts";
import { ratio } from "../stats.ts";
import { int, percent, type Table } from "../table.ts";

export const WRITERS = [8, 16, 32];

export function clientCounts(full: boolean, driver: DriverName): number[] {
  return full && driver === "in-runtime" ? [64, 1000] : [64];
}

/** Quick mode runs 16 writers with the in-runtime driver only. */
export function writerCounts(full: boolean, driver: DriverName): number[] {
  return full || driver === "in-runtime" ? WRITERS : [8, 32];
}

const key = (driver: DriverName, clients: number, writers: number) =>
  `${driver}|c${clients}|w${writers}`;

export async function run(ctx: Context): Promise<ExperimentReport> {
  const cluster = await ctx.topologies.get(4);
  const points: PointSpec[] = [];
  for (const driver of ctx.drivers) {
    for (const clients of clientCounts(ctx.full, driver)) {
      for (const writers of writerCounts(ctx.full, driver)) {
        points.push({
          key: key(driver, clients, writers),
          label: `4 replicas, ${clients} clients, waiter on, writer_concurrency ${writers}`,
          driver,
          cluster,
          clients,
          tunables: { writer_concurrency: writers },
        });
      }
    }
  }
  return report(
    await runPoints(ctx.settings, "2", points),
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
  const charts: ChartSpec[] = [];
  for (const driver of drivers) {
    const chartPoints = [];
    for (const clients of clientCounts(full, driver)) {
      const at8 = med(samples.get(key(driver, clients, 8)), (s) => s.insertsPerSecond);
      for (const writers of writerCounts(full, driver)) {
        const list = samples.get(key(driver, clients, writers));
        const rate = med(list, (s) => s.insertsPerSecond);
        const seed = seedWriters[clients]?.[writers];
        rows.push([
          DRIVER_LABEL[driver],
          String(clients),
          String(writers),
          int(rate),
          percent(ratio(rate, at8)),
          `${int(med(list, (s) => s.p50Ms))} / ${int(med(list, (s) => s.p99Ms))} ms`,
          seed === undefined ? "–" : int(seed),
        ]);
        chartPoints.push({ x: writers, y: rate, series: `${clients} clients` });
      }
    }
    charts.push(
      lineChart({
        file: `exp2-writers-${driver}.svg`,
        title: `Writer slots with the waiter on, ${DRIVER_LABEL[driver]}`,
        xTitle: "writer_concurrency",
        yTitle: "inserts / s",
        points: chartPoints,
      }),
    );
  }
  const table: Table = {
    caption: `4 replicas, waiter on, ${runs}. Seed: ${SEED_SETUP} (waiter on, 2 x 180 s).`,
    headers: [
      "driver",
      "clients",
      "writer_concurrency",
      "inserts/s",
      "vs 8 writers",
      "p50 / p99",
      "seed inserts/s",
    ],
    rows,
  };
  return {
    id: "2",
    title: "Writer slots (writer_concurrency) with the waiter on",
    summary:
      "With the waiter on, a writer slot is held only for the local commit, so more slots should buy nothing; the seed found 8, 16 and 32 writer threads equal.",
    tables: [table],
    charts,
    targets: [],
  };
}
