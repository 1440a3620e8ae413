/**
 * Promotion under load (HTTP through the front door, 4 replicas): 64 clients
 * insert through the typed client with an Idempotency-Key each, retrying the
 * same key on a 5xx or no answer (a 503 UNAVAILABLE while the master hands
 * over) until it is acked; after
 * --before seconds the master hands over (--mode handover: POST …/promote), or
 * is lost (the fault route; the seed's experiment 6 with a master that never
 * comes back) and a replica is promoted without it, by POST …/promote (--mode
 * lost) or by the replicas' watchdog (--mode auto, master_failover_ms 2000).
 * The load goes on for --after seconds. Then every table is read back from the
 * new master.
 *
 * Per run: inserts/s before and after, how long the promote call took, the
 * longest stretch without any acknowledged insert (the UNAVAILABLE window),
 * seconds to the first success sent after the promotion and to 90% of the
 * rate before, retried requests, and acked inserts lost or duplicated (both
 * must be 0). Then verify, and the old master's state as a replica.
 *
 *   node bench/promotion.ts [--runs 3] [--clients 64] [--before 4] [--after 6]
 */
import { parseArgs } from "node:util";
import { ClusterError } from "../client/index.ts";
import { ClusterClient, type Status } from "./suite/cluster.ts";
import { createTables } from "./suite/http-driver.ts";
import { audit, recovery, type Success } from "./suite/recovery.ts";
import { startBenchServer } from "./suite/server.ts";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "3" },
    clients: { type: "string", default: "64" },
    before: { type: "string", default: "4" },
    after: { type: "string", default: "6" },
    mode: { type: "string", default: "handover" },
  },
});
const mode = values.mode as "handover" | "lost" | "auto";
if (!["handover", "lost", "auto"].includes(mode)) throw new Error(`--mode ${mode}?`);
const runs = Number(values.runs);
const clients = Number(values.clients);
const beforeMs = Number(values.before) * 1000;
const afterMs = Number(values.after) * 1000;
const log = (text: string) => process.stderr.write(`${text}\n`);

/**
 * Each insert is resent every 20 ms with its key until acked, up to 200
 * attempts. Retry-After (1 s on a 503) is not waited for: the run measures how
 * soon the new master takes writes, and a second's wait would hide it.
 */
const INSERT_RETRY = {
  maxAttempts: 200,
  baseDelayMs: 20,
  maxDelayMs: 20,
  deadlineMs: Number.POSITIVE_INFINITY,
  jitter: "none",
  honourRetryAfter: false,
} as const;

interface Outcome {
  run: number;
  named: string;
  newMaster: string;
  term: number;
  beforePerSecond: number;
  afterPerSecond: number;
  promoteCallS: number;
  longestGapS: number;
  firstSuccessAfterS: number | null;
  back90AfterS: number | null;
  retried: number;
  failed: number;
  acked: number;
  lost: number;
  duplicates: number;
  /** Null when not run: a lost member cannot answer it. */
  verifyAgrees: boolean | null;
  oldMasterState: string;
}

const server = await startBenchServer();
const outcomes: Outcome[] = [];
try {
  for (let run = 1; run <= runs; run++) outcomes.push(await once(run));
} finally {
  await server.stop();
}
console.log(JSON.stringify(outcomes, null, 1));
console.log(table(outcomes));

async function once(run: number): Promise<Outcome> {
  const cluster = new ClusterClient(server.url, `promote-${run}-${Date.now().toString(36)}`);
  if (mode !== "handover") {
    await cluster.patchTunables({
      debug_fault_injection: true,
      ...(mode === "auto" ? { master_failover_ms: 2000 } : {}),
    });
  }
  const tables = Array.from({ length: clients }, (_, i) => `p_${run}_${i}`);
  await createTables(cluster.data, tables);
  const acked = new Map<string, Set<number>>(tables.map((t) => [t, new Set<number>()]));
  const successes: Success[] = [];
  let retried = 0;
  let failed = 0;
  let running = true;
  const client = async (table: string) => {
    for (let n = 0; running; n++) {
      let sentAt = 0;
      try {
        await cluster.data.insertRows(table, [{ v: n }], {
          idempotencyKey: `${table}-${n}`,
          retry: INSERT_RETRY,
          hooks: {
            onAttempt: () => {
              sentAt = Date.now();
            },
            onRetry: ({ attempt }) => {
              if (attempt === 1) retried++;
            },
          },
        });
        acked.get(table)?.add(n);
        successes.push({ sentAt, doneAt: Date.now() });
      } catch (error) {
        // A refusal (4xx) is a failure; still unknown after every attempt, the insert is left.
        if (!(error instanceof ClusterError) || (error.status > 0 && error.status < 500)) failed++;
      }
    }
  };
  const startedAt = Date.now();
  const load = Promise.all(tables.map(client));
  await new Promise((r) => setTimeout(r, beforeMs));
  // Alternate between the master's choice and a named replica.
  const named = mode === "handover" && run % 2 === 0 ? "replica-3" : "";
  const promoteAt = Date.now();
  let promoted: { master: string; term: number };
  if (mode === "handover") {
    promoted = await cluster.promote(named === "" ? {} : { replica: named });
  } else {
    await cluster.loseMaster();
    promoted = mode === "lost" ? await cluster.promote({}) : await newMaster(cluster, 2, 30_000);
  }
  const promoteDone = Date.now();
  log(`run ${run} (${mode}): ${JSON.stringify(promoted)} in ${promoteDone - promoteAt} ms`);
  await new Promise((r) => setTimeout(r, afterMs));
  running = false;
  await load;
  const end = Date.now();
  const present = new Map<string, number[]>();
  for (const t of tables) {
    const rows = await cluster.query(`SELECT v FROM ${t}`);
    present.set(
      t,
      rows.map((r) => Number(r.v)),
    );
  }
  const result = audit(acked, present);
  const rec = recovery(successes, startedAt + 1000, promoteAt, end);
  if (mode === "handover") await cluster.waitCoherent(20_000);
  // With a member lost for good, verify cannot reach every node: it is not run.
  const verify = mode === "handover" ? await cluster.verify() : null;
  const status: Status = await cluster.status();
  // A lost master never comes back in this run: it is still listed, and not coherent.
  const old = status.replicas.find((r) => r.id === "node-0");
  return {
    run,
    named: mode !== "handover" ? `(${mode})` : named || "(master's choice)",
    newMaster: promoted.master,
    term: promoted.term,
    beforePerSecond: Math.round(rec.beforePerSecond),
    afterPerSecond: Math.round(rec.afterPerSecond),
    promoteCallS: (promoteDone - promoteAt) / 1000,
    longestGapS: longestGap(successes, promoteAt - 1000, promoteDone + 5000) / 1000,
    firstSuccessAfterS: rec.firstSuccessAfterS,
    back90AfterS: rec.back90AfterS,
    retried,
    failed,
    acked: result.acked,
    lost: result.lost,
    duplicates: result.duplicates,
    verifyAgrees: verify === null ? null : verify.agree,
    oldMasterState: old?.state ?? "missing",
  };
}

/** The longest stretch in [from, to) with no acknowledged insert. */
function longestGap(successes: Success[], from: number, to: number): number {
  const done = successes
    .map((s) => s.doneAt)
    .filter((t) => t >= from && t < to)
    .sort((a, b) => a - b);
  let gap = 0;
  let last = from;
  for (const t of done) {
    gap = Math.max(gap, t - last);
    last = t;
  }
  return Math.max(gap, to - last);
}

function table(rows: Outcome[]): string {
  const head =
    "| run | promoted | term | inserts/s before | after | loss to new master (s) | longest gap (s) | first success after (s) | 90% after (s) | retried | failed | acked | lost | duplicated | verify | old master |";
  const line = `|${"---|".repeat(16)}`;
  const body = rows.map(
    (r) =>
      `| ${r.run} | ${r.newMaster} ${r.named === "(master's choice)" ? "(choice)" : r.named.startsWith("(") ? r.named : "(named)"} | ${r.term} | ${r.beforePerSecond} | ${r.afterPerSecond} | ${r.promoteCallS.toFixed(2)} | ${r.longestGapS.toFixed(2)} | ${r.firstSuccessAfterS?.toFixed(2) ?? "-"} | ${r.back90AfterS?.toFixed(2) ?? "never"} | ${r.retried} | ${r.failed} | ${r.acked} | ${r.lost} | ${r.duplicates} | ${r.verifyAgrees === null ? "not run" : r.verifyAgrees ? "agrees" : "DIFFERS"} | ${r.oldMasterState} |`,
  );
  return [head, line, ...body].join("\n");
}

/**
 * Polls GET …/status every 50 ms until it names a master of at least `term`
 * (automatic promotion). One request per poll: ClusterClient.status() retries
 * a 503 after 500 ms, which would add up to half a second to the measurement.
 */
async function newMaster(
  cluster: ClusterClient,
  term: number,
  timeoutMs: number,
): Promise<{ master: string; term: number }> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      const s = await cluster.admin.status({ retry: false });
      if (s.master.term >= term) return { master: s.master.id, term: s.master.term };
    } catch {
      // No answer: the front door is busy or restarting.
    }
    if (Date.now() >= until) throw new Error(`no master of term ${term} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
