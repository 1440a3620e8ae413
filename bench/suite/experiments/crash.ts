/**
 * Seed experiment 6: the master crashed mid-run through the fault route. HTTP
 * clients keep inserting, resend unknown outcomes with the same
 * Idempotency-Key, and remember every acknowledged insert; at the end every
 * table is read back and compared with that record.
 */
import { lineChart, type SeriesPoint } from "../charts.ts";
import { type ClusterClient, sleep } from "../cluster.ts";
import type { Context } from "../context.ts";
import { DRIVER_LABEL, type DriverName } from "../load.ts";
import { nextTag } from "../measure.ts";
import { type RecordedRun, readBack, startRecordingLoad } from "../recording-load.ts";
import { type Audit, audit, type Recovery, recovery, type Success, timeline } from "../recovery.ts";
import type { ExperimentReport, TargetCheck } from "../report.ts";
import { runInRuntimeCrash } from "../runtime-driver.ts";
import { seedCrash } from "../seed.ts";
import { median } from "../stats.ts";
import { int, seconds as secs } from "../table.ts";

export interface CrashPlan {
  clients: number[];
  warmupSeconds: number;
  beforeSeconds: number;
  afterSeconds: number;
  repeats: number;
}

export function plan(full: boolean): CrashPlan {
  return full
    ? { clients: [64, 256], warmupSeconds: 2, beforeSeconds: 10, afterSeconds: 20, repeats: 3 }
    : { clients: [64], warmupSeconds: 1, beforeSeconds: 3, afterSeconds: 5, repeats: 1 };
}

/** Recovery cannot be measured when the crash took effect only after the load ended. */
const NO_RECOVERY: Recovery = {
  beforePerSecond: Number.NaN,
  afterPerSecond: Number.NaN,
  firstSuccessAfterS: null,
  back90AfterS: null,
};

export interface CrashRun extends Recovery, Audit {
  driver: DriverName;
  /**
   * Null when the crash hit mid-run; else how long after the load ended the crash call was
   * answered (calls to the master can wait behind the in-runtime driver's load).
   */
  crashAfterLoadS: number | null;
  clients: number;
  on: boolean;
  retriedRequests: number;
  resends: number;
  replayed: number;
  failed: number;
  firstFailure: string | null;
  agree: boolean;
  notCoherent: string[];
  /** The master's epoch before the crash and after the run (a restart adds one). */
  epochBefore: number;
  epochAfter: number;
  timeline: { t: number; perSecond: number }[];
}

export async function run(ctx: Context): Promise<ExperimentReport> {
  const p = plan(ctx.full);
  const cluster = await ctx.topologies.fresh("crash", { debug_fault_injection: true });
  const runs: CrashRun[] = [];
  const total = p.repeats * ctx.drivers.length * p.clients.length * 2;
  for (let r = 1; r <= p.repeats; r++) {
    for (const driver of ctx.drivers) {
      for (const clients of p.clients) {
        for (const on of [true, false]) {
          await cluster.patchTunables({ ...ctx.settings.baseTunables, async_dist_commit: on });
          await cluster.waitCoherent(15_000);
          const epochBefore = (await cluster.status()).master.epoch;
          const load =
            driver === "http"
              ? await crashOverHttp(ctx, cluster, clients, p)
              : await crashInRuntime(ctx, cluster, clients, p);
          const notCoherent = await cluster.waitCoherent(30_000);
          const present = await readBack(ctx.url, cluster.name, load.tables);
          const verdict = await cluster.verify();
          const epochAfter = (await cluster.status()).master.epoch;
          const midRun = load.crashAt < load.end;
          const result: CrashRun = {
            driver,
            clients,
            on,
            crashAfterLoadS: midRun ? null : (load.crashAt - load.end) / 1000,
            ...(midRun ? recovery(load.successes, load.from, load.crashAt, load.end) : NO_RECOVERY),
            ...audit(load.acked, present),
            retriedRequests: load.retriedRequests,
            resends: load.resends,
            replayed: load.replayed,
            failed: load.failed,
            firstFailure: load.firstFailure,
            agree: verdict.agree,
            notCoherent,
            epochBefore,
            epochAfter,
            timeline: timeline(load.successes, load.crashAt, load.from, load.end, 500),
          };
          runs.push(result);
          ctx.log(
            `[6 ${runs.length}/${total}] ${driver} ${clients} clients, waiter ${on ? "on" : "off"}, master crashed: ${describe(result)}`,
          );
        }
      }
    }
  }
  return report(runs, p, ctx.drivers);
}

/** One loaded run with a crash, whichever driver ran it. */
interface CrashLoad extends Omit<RecordedRun, "successes"> {
  successes: Success[];
  from: number;
  crashAt: number;
  end: number;
}

async function crashOverHttp(
  ctx: Context,
  cluster: ClusterClient,
  clients: number,
  p: CrashPlan,
): Promise<CrashLoad> {
  const load = startRecordingLoad(ctx.url, cluster.name, clients, nextTag());
  await load.ready;
  const from = Date.now() + p.warmupSeconds * 1000;
  await sleep((p.warmupSeconds + p.beforeSeconds) * 1000);
  await cluster.crashMaster();
  const crashAt = Date.now();
  await sleep(p.afterSeconds * 1000);
  const end = Date.now();
  return { ...(await load.stop()), from, crashAt, end };
}

async function crashInRuntime(
  ctx: Context,
  cluster: ClusterClient,
  clients: number,
  p: CrashPlan,
): Promise<CrashLoad> {
  const raw = await runInRuntimeCrash({
    url: ctx.url,
    cluster: cluster.name,
    clients,
    tag: nextTag(),
    beforeSeconds: p.warmupSeconds + p.beforeSeconds,
    afterSeconds: p.afterSeconds,
  });
  return {
    ...raw,
    acked: new Map(Object.entries(raw.acked).map(([t, vs]) => [t, new Set(vs)])),
    successes: raw.successes.map(([sentAt, doneAt]) => ({ sentAt, doneAt })),
    from: raw.startedAt + p.warmupSeconds * 1000,
    end: raw.endAt,
  };
}

function describe(r: CrashRun): string {
  if (r.crashAfterLoadS !== null) {
    return `the crash call was answered only ${r.crashAfterLoadS.toFixed(1)} s after the load ended, so nothing was measured mid-run; acked ${r.acked}, lost ${r.lost}, duplicated ${r.duplicates}`;
  }
  return [
    `${Math.round(r.beforePerSecond)} → ${Math.round(r.afterPerSecond)} inserts/s`,
    `first success ${secs(r.firstSuccessAfterS)}`,
    `90% after ${secs(r.back90AfterS)}`,
    `retried ${r.retriedRequests} (replayed ${r.replayed})`,
    `failed ${r.failed}`,
    `acked ${r.acked}, lost ${r.lost}, duplicated ${r.duplicates}`,
    `replicas agree ${r.agree}`,
    `master epoch ${r.epochBefore} → ${r.epochAfter}`,
    ...(r.firstFailure === null ? [] : [`first failure: ${r.firstFailure.slice(0, 120)}`]),
  ].join(", ");
}

export function report(runs: CrashRun[], p: CrashPlan, drivers: DriverName[]): ExperimentReport {
  const rows: string[][] = [];
  const targets: TargetCheck[] = [];
  const chartPoints: SeriesPoint[] = [];
  const nullable = (xs: (number | null)[]) =>
    xs.some((x) => x === null) ? null : median(xs.filter((x): x is number => x !== null));
  for (const driver of drivers) {
    for (const clients of p.clients) {
      for (const on of [true, false]) {
        const group = runs.filter(
          (r) => r.driver === driver && r.clients === clients && r.on === on,
        );
        if (group.length === 0) continue;
        const m = (pick: (r: CrashRun) => number) => median(group.map(pick));
        const sum = (pick: (r: CrashRun) => number) => group.reduce((a, r) => a + pick(r), 0);
        const late = group.filter((r) => r.crashAfterLoadS !== null).length;
        rows.push([
          DRIVER_LABEL[driver],
          String(clients),
          on ? "on" : "off",
          late === 0
            ? "yes"
            : `no in ${late} of ${group.length} (the crash call waited behind the load)`,
          int(m((r) => r.beforePerSecond)),
          int(m((r) => r.afterPerSecond)),
          secs(nullable(group.map((r) => r.firstSuccessAfterS))),
          secs(nullable(group.map((r) => r.back90AfterS))),
          `${int(m((r) => r.retriedRequests))} (${int(m((r) => r.replayed))})`,
          int(m((r) => r.failed)),
          int(sum((r) => r.acked)),
          int(sum((r) => r.lost)),
          int(sum((r) => r.duplicates)),
          int(sum((r) => r.unackedPresent)),
          group.every((r) => r.agree) ? "yes" : "no",
          group.every((r) => r.epochAfter > r.epochBefore) ? "yes" : "no",
        ]);
        targets.push({
          target: "every crash run: 0 acked inserts lost, 0 duplicated",
          driver,
          measured: `${clients} clients, waiter ${on ? "on" : "off"}, ${group.length} run(s): ${int(sum((r) => r.lost))} lost of ${int(sum((r) => r.acked))} acked, ${int(sum((r) => r.duplicates))} duplicated`,
          pass: group.every((r) => r.lost === 0 && r.duplicates === 0),
        });
        const first = group[0];
        if (first !== undefined && first.crashAfterLoadS === null && clients === p.clients[0]) {
          for (const point of first.timeline) {
            chartPoints.push({
              x: point.t,
              y: point.perSecond,
              series: `waiter ${on ? "on" : "off"}, ${driver}`,
            });
          }
        }
      }
    }
  }
  const runsText =
    p.repeats === 1
      ? "1 run each (quick mode: no repeats)"
      : `medians of ${p.repeats} runs each (counts of acked, lost, duplicated and unacked rows are totals over the runs)`;
  return {
    id: "6",
    title: "Master crashed mid-run",
    summary: `4 replicas. ${p.warmupSeconds} s warm-up, ${p.beforeSeconds} s of load, then POST /admin/clusters/{c}/master/crash (debug_fault_injection on), then ${p.afterSeconds} s more; ${runsText}. "After" is the rate over the last half of the time after the crash; "90% after" is when the first 1 s window at 90% of the rate before begins. Retried: inserts resent after an unknown outcome (in brackets, those answered from the saved result: written by the old master, not executed again). Failed: inserts given up after 40 attempts. At the end every table is read back (strong reads) and compared with the clients' record; "replicas agree" is the verify route's verdict; "master restarted": its term went up.`,
    tables: [
      {
        caption:
          "Over HTTP the benchmark crashes the master through the admin route while its clients insert; the in-runtime driver crashes it through the same fault hook itself (the Worker's own calls to the master wait behind that driver's load).",
        headers: [
          "driver",
          "clients",
          "waiter",
          "crash mid-run",
          "inserts/s before",
          "inserts/s after",
          "first success after crash",
          "90% speed after",
          "retried (replayed)",
          "failed",
          "acked inserts",
          "acked lost",
          "duplicated",
          "written, not acked",
          "replicas agree",
          "master restarted",
        ],
        rows,
      },
      {
        caption:
          "The seed for comparison (8 nodes, kill -9 of the master 3 minutes into a 6-minute run, a new master elected from the replicants; 3 runs each, ranges as published):",
        headers: [
          "clients",
          "waiter",
          "before",
          "after",
          "new master after",
          "full speed after",
          "retried",
          "failed",
          "acked lost",
        ],
        rows: seedCrash.map((s) => [
          String(s.clients),
          s.waiter,
          s.before,
          s.after,
          s.newMaster,
          s.fullSpeed,
          s.retried,
          s.failed,
          String(s.lost),
        ]),
      },
    ],
    charts: [
      lineChart({
        file: "exp6-crash.svg",
        title: `Inserts/s around the master crash, ${p.clients[0]} clients (500 ms buckets)`,
        xTitle: "seconds from the crash",
        yTitle: "inserts / s",
        xType: "quantitative",
        points: chartPoints,
        rules: [0],
      }),
    ],
    targets,
  };
}
