/**
 * Seed experiment 7: a replica stopped under load, then restarted: time until
 * it is coherent again, with logput_window_bytes off, at its default, and
 * smaller than the backlog (so the replica pulls the log).
 */
import { type CatchupRun, measureCatchup } from "../catchup.ts";
import type { Context } from "../context.ts";
import { DRIVER_LABEL } from "../load.ts";
import { nextTag } from "../measure.ts";
import type { ExperimentReport } from "../report.ts";
import { seedCatchup } from "../seed.ts";
import { median } from "../stats.ts";
import { int, seconds } from "../table.ts";

export interface CatchupPlan {
  clients: number;
  loadSeconds: number;
  downSeconds: number;
  /** null: the default. */
  windows: (number | null)[];
  repeats: number;
}

export function plan(full: boolean): CatchupPlan {
  return full
    ? { clients: 64, loadSeconds: 10, downSeconds: 60, windows: [null, 0, 100_000], repeats: 3 }
    : { clients: 64, loadSeconds: 3, downSeconds: 10, windows: [0, 10_000], repeats: 1 };
}

export async function run(ctx: Context): Promise<ExperimentReport> {
  const p = plan(ctx.full);
  const cluster = await ctx.topologies.fresh("catchup", { debug_fault_injection: true });
  const runs: CatchupRun[] = [];
  const total = p.repeats * p.windows.length;
  const defaultWindow = Number(ctx.settings.baseTunables.logput_window_bytes);
  for (let r = 1; r <= p.repeats; r++) {
    for (const window of p.windows) {
      await cluster.waitCoherent(30_000);
      const result = await measureCatchup({
        url: ctx.url,
        cluster,
        clients: p.clients,
        loadSeconds: p.loadSeconds,
        downSeconds: p.downSeconds,
        windowBytes: window ?? defaultWindow,
        replica: "replica-2",
        tag: nextTag(),
        log: ctx.log,
      });
      runs.push(result);
      ctx.log(
        `[7 ${runs.length}/${total}] http ${p.clients} clients, replica-2 down ${p.downSeconds} s, logput_window_bytes ${result.windowBytes}: ${int(result.behindAtRestartRecords)} records / ${int(result.behindAtRestartBytes)} bytes behind, caught up after ${seconds(result.caughtUpAfterSeconds)}, coherent after ${seconds(result.coherentAfterSeconds)}, ${result.pullBatches} pulled batches`,
      );
    }
  }
  return report(runs, p, defaultWindow);
}

/** The median, or how many runs never got there within 600 s. */
function medianSeconds(values: (number | null)[], runs: number): string {
  const missing = values.filter((v) => v === null).length;
  if (missing > 0) return `never in 600 s (${missing} of ${runs})`;
  return seconds(median(values.filter((v): v is number => v !== null)));
}

export function report(
  runs: CatchupRun[],
  p: CatchupPlan,
  defaultWindow: number,
): ExperimentReport {
  const rows = p.windows.map((window) => {
    const bytes = window ?? defaultWindow;
    const group = runs.filter((r) => r.windowBytes === bytes);
    const m = (pick: (r: CatchupRun) => number) => median(group.map(pick));
    const coherent = group.map((r) => r.coherentAfterSeconds);
    const caughtUp = group.map((r) => r.caughtUpAfterSeconds);
    const pulled = m((r) => r.pullBatches);
    return [
      DRIVER_LABEL.http,
      `${p.downSeconds} s${p.downSeconds < 60 ? " (quick mode; the seed: 60 s)" : ""}`,
      `${int(bytes)}${window === null ? " (default)" : bytes === 0 ? " (off)" : ""}`,
      `${int(m((r) => r.behindAtRestartRecords))} records, ${int(m((r) => r.behindAtRestartBytes / 1000))} KB`,
      medianSeconds(caughtUp, group.length),
      medianSeconds(coherent, group.length),
      pulled > 0 ? `pulled ${int(pulled)} batch${pulled === 1 ? "" : "es"}` : "relay resend",
      int(m((r) => r.insertsPerSecondDuringCatchup ?? Number.NaN)),
      int(m((r) => r.failedRequests)),
    ];
  });
  const runsText =
    p.repeats === 1 ? "1 run each (quick mode: no repeats)" : `medians of ${p.repeats} runs each`;
  return {
    id: "7",
    title: "A replica falling behind",
    summary: `${p.clients} HTTP clients inserting through the front door; after ${p.loadSeconds} s, replica-2 is cut off (the disconnect fault route) for the time shown, then reconnected. "Caught up": it has acked everything the master had written at the reconnect; "coherent again": it is back in the wait sets, which also waits out coherency_rejoin_penalty_ms (10 s by default) counted from when it was marked incoherent (about rep_timeout_ms after the cut), so a short outage shows the penalty rather than the catch-up; ${runsText}.`,
    tables: [
      {
        caption: `Driver: ${DRIVER_LABEL.http} (status must be read while the load runs).`,
        headers: [
          "driver",
          "down for",
          "logput_window_bytes",
          "behind at restart",
          "caught up after",
          "coherent again after",
          "catch-up path",
          "inserts/s meanwhile",
          "failed requests",
        ],
        rows,
      },
      {
        caption: "The seed for comparison (8 nodes, 1000 clients, replicant down 60 s):",
        headers: ["setting", "behind at restart", "coherent again after"],
        rows: seedCatchup.map((s) => [s.setting, s.behind, s.coherentAfter]),
      },
    ],
    charts: [],
    targets: [],
  };
}
