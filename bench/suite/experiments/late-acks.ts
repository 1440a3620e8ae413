/**
 * Seed experiment 3: late acks (every replica holds each ack for
 * debug_ack_delay_ms) at 64 clients, off vs on; the same delay at 256 clients
 * against no delay; and slow replicas (debug_apply_delay_ms per message).
 * 4 replicas throughout.
 */
import { type ChartSpec, lineChart } from "../charts.ts";
import { type Context, med, runsPhrase } from "../context.ts";
import { DRIVER_LABEL, type DriverName } from "../load.ts";
import { type PointSpec, type Sample, runPoints } from "../measure.ts";
import type { ExperimentReport, TargetCheck } from "../report.ts";
import { SEED_SETUP, seedLateAcks, seedSlowReplicas } from "../seed.ts";
import { ratio } from "../stats.ts";
import { int, ms, percent, type Table, times } from "../table.ts";

export const TARGET_DELAY_MS = 100;
export const WIDE_CLIENTS = 256;
export const SLOW_APPLY_MS = 1;
export const SLOW_CLIENTS = 16;
/** The seed's headline, beaten: 95% of the 8x bound of 64 clients over 8 writer slots. */
export const A_TARGET = 7.6;
export const B_TARGET = 0.9;

export function delays(full: boolean, driver: DriverName): number[] {
  if (full) return [1, 5, 20, TARGET_DELAY_MS];
  return driver === "in-runtime" ? [1, 5, TARGET_DELAY_MS] : [TARGET_DELAY_MS];
}

export function runsSlow(full: boolean, driver: DriverName): boolean {
  return full || driver === "in-runtime";
}

const lateKey = (driver: DriverName, delay: number, on: boolean) =>
  `${driver}|late|d${delay}|${on ? "on" : "off"}`;
const wideKey = (driver: DriverName, delay: number) => `${driver}|wide|d${delay}`;
const slowKey = (driver: DriverName, on: boolean) => `${driver}|slow|${on ? "on" : "off"}`;

export async function run(ctx: Context): Promise<ExperimentReport> {
  const cluster = await ctx.topologies.get(4);
  const points: PointSpec[] = [];
  const point = (
    key: string,
    label: string,
    driver: DriverName,
    clients: number,
    tunables: PointSpec["tunables"],
  ) => points.push({ key, label, driver, cluster, clients, tunables });
  for (const driver of ctx.drivers) {
    for (const delay of delays(ctx.full, driver)) {
      for (const on of [true, false]) {
        point(
          lateKey(driver, delay, on),
          `64 clients, ack delay ${delay} ms, waiter ${on ? "on" : "off"}`,
          driver,
          64,
          {
            async_dist_commit: on,
            debug_ack_delay_ms: delay,
          },
        );
      }
    }
    for (const delay of [TARGET_DELAY_MS, 0]) {
      point(
        wideKey(driver, delay),
        `${WIDE_CLIENTS} clients, ack delay ${delay} ms, waiter on`,
        driver,
        WIDE_CLIENTS,
        {
          debug_ack_delay_ms: delay,
        },
      );
    }
    if (runsSlow(ctx.full, driver)) {
      for (const on of [true, false]) {
        point(
          slowKey(driver, on),
          `${SLOW_CLIENTS} clients, apply delay ${SLOW_APPLY_MS} ms, waiter ${on ? "on" : "off"}`,
          driver,
          SLOW_CLIENTS,
          {
            async_dist_commit: on,
            debug_apply_delay_ms: SLOW_APPLY_MS,
          },
        );
      }
    }
  }
  return report(
    await runPoints(ctx.settings, "3", points),
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
  const rate = (k: string) => med(samples.get(k), (s) => s.insertsPerSecond);
  const held = (k: string) => med(samples.get(k), (s) => s.ackHeldMs);
  const rtt = (k: string) => med(samples.get(k), (s) => s.ackRttMs);
  const pct = (k: string, f: "p50Ms" | "p99Ms") => med(samples.get(k), (s) => s[f]);
  const late: string[][] = [];
  const wide: string[][] = [];
  const slow: string[][] = [];
  const targets: TargetCheck[] = [];
  const chartPoints = [];
  for (const driver of drivers) {
    for (const delay of delays(full, driver)) {
      const onK = lateKey(driver, delay, true);
      const offK = lateKey(driver, delay, false);
      const on = rate(onK);
      const off = rate(offK);
      // Off: every writer slot is held for a whole ack round trip.
      const bound = (8 * 1000) / rtt(offK);
      const seed = seedLateAcks[delay];
      late.push([
        DRIVER_LABEL[driver],
        `${delay} ms`,
        int(off),
        int(on),
        times(ratio(on, off)),
        `${ms(held(offK))} / ${ms(held(onK))}`,
        `${ms(rtt(offK))} / ${ms(rtt(onK))}`,
        int(bound),
        `${int(pct(offK, "p50Ms"))} / ${int(pct(onK, "p50Ms"))} ms`,
        `${int(pct(offK, "p99Ms"))} / ${int(pct(onK, "p99Ms"))} ms`,
        seed === undefined
          ? "–"
          : `${int(seed.off)} → ${int(seed.on)} (${times(ratio(seed.on, seed.off))})`,
      ]);
      chartPoints.push({ x: `${delay} ms`, y: on, series: `on, ${driver}` });
      chartPoints.push({ x: `${delay} ms`, y: off, series: `off, ${driver}` });
      if (delay === TARGET_DELAY_MS) {
        const r = ratio(on, off);
        targets.push({
          target: `A: ack delay ${TARGET_DELAY_MS} ms, 64 clients, 4 replicas: on / off >= ${A_TARGET}x (95% of the 8x bound)`,
          driver,
          // The bound assumes off's slots turn over once per ack round trip; the
          // share says how far off fell short of that, which lifts the ratio.
          measured: `on ${int(on)}, off ${int(off)}: ${times(r)}; effective ack delay on ${ms(held(onK))} / off ${ms(held(offK))}; off at ${percent(ratio(off, bound))} of its 8 slots / ack RTT (${int(bound)}/s)`,
          pass: r >= A_TARGET,
        });
      }
    }
    const withDelay = wideKey(driver, TARGET_DELAY_MS);
    const noDelay = wideKey(driver, 0);
    const share = ratio(rate(withDelay), rate(noDelay));
    wide.push([
      DRIVER_LABEL[driver],
      String(WIDE_CLIENTS),
      int(rate(withDelay)),
      int(rate(noDelay)),
      percent(share),
      ms(held(withDelay)),
      `${int(pct(withDelay, "p50Ms"))} / ${int(pct(noDelay, "p50Ms"))} ms`,
    ]);
    targets.push({
      target: `B: ack delay ${TARGET_DELAY_MS} ms, ${WIDE_CLIENTS} clients: on >= ${B_TARGET * 100}% of its own no-delay throughput`,
      driver,
      measured: `${int(rate(withDelay))} vs ${int(rate(noDelay))}: ${percent(share)}; effective ack delay ${ms(held(withDelay))} / ${ms(held(noDelay))}`,
      pass: share >= B_TARGET,
    });
    if (runsSlow(full, driver)) {
      const onK = slowKey(driver, true);
      const offK = slowKey(driver, false);
      const dropped = (k: string) =>
        Math.max(0, ...(samples.get(k) ?? []).map((s) => s.notCoherentAtEnd.length));
      slow.push([
        DRIVER_LABEL[driver],
        String(SLOW_CLIENTS),
        `${SLOW_APPLY_MS} ms`,
        int(rate(offK)),
        int(rate(onK)),
        times(ratio(rate(onK), rate(offK))),
        `${int(pct(offK, "p50Ms"))} / ${int(pct(onK, "p50Ms"))} ms`,
        `${dropped(offK)} / ${dropped(onK)}`,
        `${int(seedSlowReplicas.off)} → ${int(seedSlowReplicas.on)}`,
      ]);
    }
  }
  const tables: Table[] = [
    {
      caption: `Late acks: 4 replicas, 64 clients, ${runs}. "Held" is the delay the replicas really applied (ackDelayTotalMs / acks), "ack RTT" the master's mean batch round trip; "off bound" is 8 writer slots / RTT. Seed: ${SEED_SETUP}, 2 x 120 s (it measured 1, 2 and 5 ms).`,
      headers: [
        "driver",
        "ack delay",
        "off inserts/s",
        "on inserts/s",
        "on / off",
        "held off / on",
        "ack RTT off / on",
        "off bound",
        "p50 off / on",
        "p99 off / on",
        "seed off → on",
      ],
      rows: late,
    },
    {
      caption: `The same ack delay at ${WIDE_CLIENTS} clients, waiter on, against no delay (4 replicas, ${runs}).`,
      headers: [
        "driver",
        "clients",
        `on, ${TARGET_DELAY_MS} ms inserts/s`,
        "on, no delay inserts/s",
        "share",
        "held",
        "p50 delay / none",
      ],
      rows: wide,
    },
  ];
  if (slow.length > 0) {
    tables.push({
      caption: `Slow replicas: every replica sleeps ${SLOW_APPLY_MS} ms per message before applying it (debug_apply_delay_ms), ${SLOW_CLIENTS} clients, 4 replicas, ${runs}. Seed: 1 ms per message, 16 clients, 2 x 120 s.`,
      headers: [
        "driver",
        "clients",
        "apply delay",
        "off inserts/s",
        "on inserts/s",
        "on / off",
        "p50 off / on",
        "replicas not coherent after (off / on)",
        "seed off → on",
      ],
      rows: slow,
    });
  }
  const charts: ChartSpec[] = [
    lineChart({
      file: "exp3-late-acks.svg",
      title: "Late acks, 64 clients, 4 replicas",
      xTitle: "every ack delayed by",
      yTitle: "inserts / s",
      points: chartPoints,
    }),
  ];
  return {
    id: "3",
    title: "Late acks and slow replicas",
    summary:
      "With the waiter off, each of the writer slots is held for a whole ack round trip, so throughput is bounded by slots / round trip; with it on, by clients / round trip or by the CPU. Slow replicas cap both modes at the replicas' apply rate.",
    tables,
    charts,
    targets,
  };
}
