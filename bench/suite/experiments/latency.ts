/**
 * Commit latency against the ack delay: with the waiter on, a commit should
 * cost its local commit plus one round trip to the slowest replica of its wait
 * set. 1, 8 and 64 clients at debug_ack_delay_ms 5, 20 and 100 (4 replicas,
 * in-runtime driver: the dev proxy would add its own queue to every HTTP
 * number). Targets: p50 <= D + 5 ms at 1 and 8 clients, <= D + 15% at 64.
 */
import { type ChartSpec, lineChart } from "../charts.ts";
import { type Context, med, runsPhrase } from "../context.ts";
import { DRIVER_LABEL } from "../load.ts";
import { type PointSpec, type Sample, runPoints } from "../measure.ts";
import type { ExperimentReport, TargetCheck } from "../report.ts";
import { int, ms, type Table } from "../table.ts";

export const LATENCY_DELAYS = [5, 20, 100];
export const LATENCY_CLIENTS = [1, 8, 64];
/** Few clients: the target is an absolute margin; many: a share of the delay. */
export const FEW_CLIENTS_MARGIN_MS = 5;
export const MANY_CLIENTS_PERCENT = 15;

export const latencyKey = (clients: number, delay: number) =>
  `in-runtime|lat|c${clients}|d${delay}`;

/** The p50 the target allows at this point. */
export function allowedP50(clients: number, delay: number): number {
  return clients <= 8
    ? delay + FEW_CLIENTS_MARGIN_MS
    : delay + (delay * MANY_CLIENTS_PERCENT) / 100;
}

export async function run(ctx: Context): Promise<ExperimentReport> {
  if (!ctx.drivers.includes("in-runtime")) {
    throw new Error(
      "the latency targets are measured with the in-runtime driver (--drivers in-runtime)",
    );
  }
  const cluster = await ctx.topologies.get(4);
  const points: PointSpec[] = [];
  // No delay: what this machine makes at each client count, the ceiling of any delay's rate.
  for (const delay of [0, ...LATENCY_DELAYS]) {
    for (const clients of LATENCY_CLIENTS) {
      points.push({
        key: latencyKey(clients, delay),
        label: `${clients} clients, ack delay ${delay} ms, waiter on`,
        driver: "in-runtime",
        cluster,
        clients,
        tunables: { async_dist_commit: true, debug_ack_delay_ms: delay },
      });
    }
  }
  return report(await runPoints(ctx.settings, "L", points), runsPhrase(ctx.settings));
}

export function report(samples: Map<string, Sample[]>, runs: string): ExperimentReport {
  const pick = (k: string, f: (s: Sample) => number) => med(samples.get(k), f);
  const rows: string[][] = [];
  const targets: TargetCheck[] = [];
  const chartPoints = [];
  for (const delay of LATENCY_DELAYS) {
    for (const clients of LATENCY_CLIENTS) {
      const k = latencyKey(clients, delay);
      const p50 = pick(k, (s) => s.p50Ms);
      const held = pick(k, (s) => s.ackHeldMs);
      const rtt = pick(k, (s) => s.ackRttMs);
      const rate = pick(k, (s) => s.insertsPerSecond);
      const allowed = allowedP50(clients, delay);
      // Closed-loop clients: at the allowed p50 they would make this many inserts/s.
      const needed = (clients * 1000) / allowed;
      const ceiling = pick(latencyKey(clients, 0), (s) => s.insertsPerSecond);
      rows.push([
        String(clients),
        `${delay} ms`,
        ms(held),
        ms(rtt),
        ms(p50),
        ms(pick(k, (s) => s.p99Ms)),
        `+${ms(p50 - delay)}`,
        `${ms(allowed)}`,
        int(rate),
        int(needed),
        int(ceiling),
      ]);
      chartPoints.push({ x: `${delay} ms`, y: p50 - delay, series: `${clients} clients` });
      targets.push({
        target: `ack delay ${delay} ms, ${clients} client${clients === 1 ? "" : "s"}, 4 replicas: p50 <= ${clients <= 8 ? `D + ${FEW_CLIENTS_MARGIN_MS} ms` : `D + ${MANY_CLIENTS_PERCENT}%`} (${ms(allowed)})`,
        driver: "in-runtime",
        measured: `p50 ${ms(p50)} (D + ${ms(p50 - delay)}); effective ack delay ${ms(held)}; ${int(rate)} inserts/s, ${int(needed)} at the allowed p50, ${int(ceiling)} with no delay${needed > ceiling ? " (out of this machine's reach: the allowed p50 needs more inserts/s than the same clients make with no delay at all)" : ""}`,
        pass: p50 <= allowed,
      });
    }
  }
  const tables: Table[] = [
    {
      caption: `Commit latency, waiter on, 4 replicas, ${DRIVER_LABEL["in-runtime"]}, ${runs}. "Held" is the delay the replicas really applied, "ack RTT" the master's mean batch round trip (send to ack); "above D" is p50 minus the configured delay; "needed" is the rate the clients would make at the allowed p50 (clients / p50), and "no-delay inserts/s" what the same clients made with no ack delay in the same run: where "needed" exceeds it, this machine's one thread, which runs the master, every replica and the driver, cannot meet the target at any link speed.`,
      headers: [
        "clients",
        "ack delay D",
        "held",
        "ack RTT",
        "p50",
        "p99",
        "p50 above D",
        "allowed p50",
        "inserts/s",
        "needed",
        "no-delay inserts/s",
      ],
      rows,
    },
  ];
  const charts: ChartSpec[] = [
    lineChart({
      file: "expL-latency.svg",
      title: "p50 above the ack delay, 4 replicas, waiter on",
      xTitle: "every ack delayed by",
      yTitle: "p50 - delay (ms)",
      points: chartPoints,
    }),
  ];
  return {
    id: "L",
    title: "Commit latency against the ack delay",
    summary:
      "A commit should cost its local commit plus one round trip to the slowest replica of its wait set. Each client inserts single rows into its own table, one insert in flight, waiter on.",
    tables,
    charts,
    targets,
  };
}
