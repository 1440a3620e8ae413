/**
 * Seed experiment 1: waiter off vs on by clients, with 4 and 7 replicas, and a
 * 0-replica baseline (the same inserts, nothing to wait for) in the same run.
 */
import { lineChart, type ChartSpec } from "../charts.ts";
import { type Context, med, runsPhrase } from "../context.ts";
import { DRIVER_LABEL, type DriverName } from "../load.ts";
import { type PointSpec, type Sample, runPoints } from "../measure.ts";
import type { ExperimentReport, TargetCheck } from "../report.ts";
import { SEED_SETUP, seedOffOnMedian } from "../seed.ts";
import { ratio } from "../stats.ts";
import { int, ms, percent, times, type Table } from "../table.ts";

export const REPLICA_COUNTS = [4, 7];
/**
 * C: replication keeps most of a lone node's rate. On / off is printed beside
 * it but not checked: with no delay, off's 8 writer slots turn over every few
 * milliseconds here and fill the one thread as well as the waiter does.
 */
export const C_VS_BASELINE = 0.6;

export function clientCounts(full: boolean, driver: DriverName): number[] {
  if (full) return [16, 32, 64, 128, 256];
  return driver === "in-runtime" ? [64, 256] : [64];
}

/** Quick mode runs 7 replicas with the in-runtime driver only. */
export function replicaCounts(full: boolean, driver: DriverName): number[] {
  return full || driver === "in-runtime" ? REPLICA_COUNTS : [4];
}

export const key = (driver: DriverName, replicas: number, clients: number, on: boolean) =>
  `${driver}|r${replicas}|c${clients}|${on ? "on" : "off"}`;

export async function run(ctx: Context): Promise<ExperimentReport> {
  const points: PointSpec[] = [];
  for (const driver of ctx.drivers) {
    for (const clients of clientCounts(ctx.full, driver)) {
      points.push({
        key: key(driver, 0, clients, true),
        label: `0 replicas, ${clients} clients`,
        driver,
        cluster: await ctx.topologies.get(0),
        clients,
        tunables: {},
      });
      for (const replicas of replicaCounts(ctx.full, driver)) {
        const cluster = await ctx.topologies.get(replicas);
        for (const on of [true, false]) {
          points.push({
            key: key(driver, replicas, clients, on),
            label: `${replicas} replicas, ${clients} clients, waiter ${on ? "on" : "off"}`,
            driver,
            cluster,
            clients,
            tunables: { async_dist_commit: on },
          });
        }
      }
    }
  }
  const samples = await runPoints(ctx.settings, "1", points);
  return report(samples, ctx.drivers, ctx.full, runsPhrase(ctx.settings));
}

export function report(
  samples: Map<string, Sample[]>,
  drivers: DriverName[],
  full: boolean,
  runs: string,
): ExperimentReport {
  const rate = (k: string) => med(samples.get(k), (s) => s.insertsPerSecond);
  const p = (k: string, f: "p50Ms" | "p99Ms") => med(samples.get(k), (s) => s[f]);
  const held = (k: string) => med(samples.get(k), (s) => s.ackHeldMs);
  const tables: Table[] = [];
  const charts: ChartSpec[] = [];
  const targets: TargetCheck[] = [];
  const cost: string[][] = [];
  for (const driver of drivers) {
    const rows: string[][] = [];
    const chartPoints = [];
    for (const clients of clientCounts(full, driver)) {
      const base = rate(key(driver, 0, clients, true));
      chartPoints.push({ x: clients, y: base, series: "0 replicas" });
      for (const replicas of replicaCounts(full, driver)) {
        const on = rate(key(driver, replicas, clients, true));
        const off = rate(key(driver, replicas, clients, false));
        const onKey = key(driver, replicas, clients, true);
        const offKey = key(driver, replicas, clients, false);
        const seed = seedOffOnMedian(clients);
        rows.push([
          DRIVER_LABEL[driver],
          String(replicas),
          String(clients),
          int(off),
          int(on),
          times(ratio(on, off)),
          `${int(p(offKey, "p50Ms"))} / ${int(p(onKey, "p50Ms"))} ms`,
          `${int(p(offKey, "p99Ms"))} / ${int(p(onKey, "p99Ms"))} ms`,
          int(base),
          percent(ratio(on, base)),
          seed === null
            ? "–"
            : `${int(seed.off)} → ${int(seed.on)} (${times(ratio(seed.on, seed.off))})`,
        ]);
        const onSamples = samples.get(onKey);
        cost.push([
          DRIVER_LABEL[driver],
          String(replicas),
          String(clients),
          int(med(onSamples, (s) => s.passes)),
          med(onSamples, (s) => s.checkedPerPass).toFixed(2),
          med(onSamples, (s) => s.answeredPerPass).toFixed(2),
          int(med(onSamples, (s) => s.skippedEarlyStop)),
        ]);
        chartPoints.push({ x: clients, y: on, series: `on, ${replicas} replicas` });
        chartPoints.push({ x: clients, y: off, series: `off, ${replicas} replicas` });
        if (replicas === 4 && clients === 64) {
          const vsOff = ratio(on, off);
          const vsBase = ratio(on, base);
          targets.push({
            target: `C: no delay, 64 clients, 4 replicas: on >= ${C_VS_BASELINE * 100}% of 0 replicas (on / off beside it)`,
            driver,
            measured: `on ${int(on)}, off ${int(off)} (${times(vsOff)}), 0 replicas ${int(base)} (${percent(vsBase)}); effective ack delay ${ms(held(onKey))} / ${ms(held(offKey))}`,
            pass: vsBase >= C_VS_BASELINE,
          });
        }
      }
    }
    tables.push({
      caption: `Driver: ${DRIVER_LABEL[driver]}. Inserts/s, ${runs}. Seed: ${SEED_SETUP}, median of its 3 runs of 300 s.`,
      headers: [
        "driver",
        "replicas",
        "clients",
        "off inserts/s",
        "on inserts/s",
        "on / off",
        "p50 off / on",
        "p99 off / on",
        "0 replicas inserts/s",
        "on / 0 replicas",
        "seed off → on (8 nodes)",
      ],
      rows,
    });
    if (clientCounts(full, driver).length > 1) {
      charts.push(
        lineChart({
          file: `exp1-off-on-${driver}.svg`,
          title: `Off vs on, ${DRIVER_LABEL[driver]}`,
          xTitle: "clients",
          yTitle: "inserts / s",
          points: chartPoints,
        }),
      );
    }
  }
  tables.push({
    caption:
      "What the waiter's passes cost with the waiter on (same runs; counts cover warm-up and measured time): a new commit is checked on its own, a pass of one; acks bring a pass over the waiting commits, which examines those it answers plus the first one still waiting on a lagging node, and the early-stop rule skips the rest with one set lookup each.",
    headers: [
      "driver",
      "replicas",
      "clients",
      "passes",
      "examined / pass",
      "answered / pass",
      "skipped by early stop",
    ],
    rows: cost,
  });
  return {
    id: "1",
    title: "Waiter off vs on",
    summary:
      "Each client inserts single rows into its own table, one insert in flight. The 0-replica baseline runs the same inserts on a cluster whose replicas were removed through the membership API (nothing to wait for).",
    tables,
    charts,
    targets,
  };
}
