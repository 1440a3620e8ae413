/**
 * The randomized fault run shared by the CI test (test/chaos.test.ts, inside
 * workerd) and `npm run chaos` (scripts/chaos.ts, against `wrangler dev`).
 *
 * Concurrent clients, through the typed client (client/), insert unique values
 * with an Idempotency-Key (retrying with the same key while the outcome is
 * unknown; the client's hooks log each attempt) and make strong reads of
 * recent values; they also write, compare-and-set and strongly read a few
 * register keys (test/chaos-registers.ts). Meanwhile a fault loop crashes the
 * master, stops and starts replicas, crashes replicas (at once or partway
 * through a batch), promotes a replica to master (a new term, the old master
 * a replica), and the master's links drop, delay, duplicate and reorder
 * messages. Then every fault is healed, the cluster must converge, the history
 * checker judges what the clients were told against what every node holds,
 * and the linearizability checker judges the register history.
 *
 * Everything random comes from the seed: which operations the clients make,
 * which faults the loop injects, and (on the master) each message's fate.
 * Timing is not, so a seed reproduces the same schedule of decisions, not the
 * same interleaving.
 */
import {
  type CallOptions,
  type ClientOptions,
  DosqliteClient,
  NetworkError,
  NotFoundError,
  type RetryPolicy,
} from "../client/index.ts";
import { type CheckReport, checkHistory, History, type NodeRows } from "../core/history";
import { checkLinearizability, type LinearizabilityReport } from "../core/linearizability";
import { createRng, type MessageFaultConfig, type Rng } from "../core/message-faults";
import { operationsFromHistory, type RegisterHistoryEvent } from "../core/register-history";
import { definitelyFailed, describeFailure } from "./chaos-outcomes";
import { REGISTER_SETUP, RegisterClients } from "./chaos-registers";

/** How the run reaches the front door: url, fetch and tokens (the cluster is the run's). */
export type Endpoint = Omit<ClientOptions, "cluster">;

/**
 * A write is resent under its key while its outcome is unknown: 40 attempts,
 * 40 ms after the first and doubling to 500 ms, no jitter and no Retry-After,
 * so a seed keeps the schedule of attempts it always had.
 */
export const WRITE_RETRY: RetryPolicy = {
  maxAttempts: 40,
  baseDelayMs: 40,
  maxDelayMs: 500,
  deadlineMs: Number.POSITIVE_INFINITY,
  jitter: "none",
  honourRetryAfter: false,
};

/** Admin calls wait out a restarting master: 21 attempts, 100 ms apart, whatever the call. */
const ADMIN_RETRY: CallOptions = {
  retry: { ...WRITE_RETRY, maxAttempts: 21, baseDelayMs: 100, maxDelayMs: 100 },
};

export interface ChaosOptions {
  cluster: string;
  seed: number;
  clients: number;
  /** The run stops starting operations after this many, or after `seconds`. */
  maxOps: number;
  seconds: number;
  /** Mean time between injected faults. */
  faultEveryMs: number;
  masterCrashes: boolean;
  replicaStops: boolean;
  replicaCrashes: boolean;
  /** Cut the master's link to a replica for a while (the replica stays up). */
  partitions: boolean;
  /** Promote a replica (named, or the master's choice) while clients write and read. */
  promotions?: boolean;
  /**
   * Lose the master (it answers nothing), promote without it, and bring it
   * back a while later: it must rejoin as a replica. Every other loss is left
   * to automatic promotion (the tunable master_failover_ms) when it is on.
   */
  masterLosses?: boolean;
  /** Message fault probabilities (the seed is the run's). */
  messages: Omit<MessageFaultConfig, "seed">;
  tunables: Record<string, unknown>;
  /** How long the cluster may take to converge once every fault is healed. */
  convergeMs: number;
  endpoint: Endpoint;
  log?: (line: string) => void;
}

export const CHAOS_TUNABLES: Record<string, unknown> = {
  debug_fault_injection: true,
  // A lease longer than the ack deadline: a replica marked incoherent may still hold one.
  rep_timeout_ms: 200,
  coherency_lease_ms: 600,
  coherency_rejoin_penalty_ms: 500,
  heartbeat_ms: 50,
  commit_timeout_ms: 10_000,
  // Small, so that replicas also catch up by pulling the log and by snapshots.
  logput_window_bytes: 4_000,
  log_retain_records: 20,
  log_max_records: 100,
  // Automatic promotion: every other lost master is left to the replicas.
  master_failover_ms: 1000,
};

export const CHAOS_MESSAGES: ChaosOptions["messages"] = {
  drop: 0.03,
  delay: 0.1,
  delayMs: 40,
  duplicate: 0.05,
  reorder: 0.05,
};

export type FaultTally = Record<string, number>;

export interface ChaosReport {
  seed: number;
  seconds: number;
  check: CheckReport;
  /** Faults the run injected: its own (crashes, stops) and the master's message faults. */
  faults: FaultTally;
  /** How replicas caught up: snapshots installed and log batches pulled. */
  catchUp: { snapshots: number; pullBatches: number };
  /** Replicas not coherent and caught up within convergeMs of healing. */
  unrecovered: string[];
  history: History;
  /** The register keys: their history (Jepsen's shape), how it went, and its verdict. */
  registers: { events: RegisterHistoryEvent[]; counts: RegisterClients["counts"] };
  linearizability: LinearizabilityReport;
}

const TABLE = "chaos";
const READ_SCOPE = 24;

interface Status {
  master: { id: string; lsn: number; term: number; epoch: number };
  replicas: {
    id: string;
    state: string;
    ackedLsn: number;
    snapshots?: number;
    pullBatches?: number;
  }[];
  faults?: { injected: Record<string, number> };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const { cluster, seed } = options;
  const log = options.log ?? (() => {});
  const history = new History();
  const started = Date.now();
  // Retries are the workload's to choose, call by call.
  const db = new DosqliteClient({ ...options.endpoint, cluster, retry: false });
  const { admin } = db;
  const { faults } = admin;
  const tally = {
    masterCrash: 0,
    replicaStop: 0,
    replicaCrash: 0,
    midBatchCrash: 0,
    partition: 0,
    promotion: 0,
    masterLoss: 0,
    autoPromotion: 0,
  };
  /**
   * Message faults and catch-up counts by master incarnation (member and
   * epoch): they reset when a master restarts, and each master counts its own.
   */
  const byEpoch = new Map<string, Record<string, number>>();
  const catchUpByEpoch = new Map<string, { snapshots: number; pullBatches: number }>();

  /**
   * An admin call's answer, or null when the cluster refused it (after
   * ADMIN_RETRY's attempts); no answer at all to the last attempt throws.
   */
  const answered = async <T>(call: Promise<T>): Promise<T | null> => {
    try {
      return await call;
    } catch (error) {
      if (error instanceof NetworkError) throw error;
      return null;
    }
  };
  const status = async (): Promise<Status> => admin.status(ADMIN_RETRY);
  const noteFaults = (s: Status) => {
    const incarnation = `${s.master.id}:${s.master.epoch}`;
    if (s.faults !== undefined) byEpoch.set(incarnation, { ...s.faults.injected });
    catchUpByEpoch.set(incarnation, {
      snapshots: s.replicas.reduce((n, r) => n + (r.snapshots ?? 0), 0),
      pullBatches: s.replicas.reduce((n, r) => n + (r.pullBatches ?? 0), 0),
    });
  };

  // ----------------------------------------------------------------- setup
  await db.exec([
    {
      sql: `CREATE TABLE IF NOT EXISTS ${TABLE} (id INTEGER PRIMARY KEY, k TEXT NOT NULL, client INTEGER)`,
    },
    { sql: `CREATE INDEX IF NOT EXISTS ${TABLE}_k ON ${TABLE} (k)` },
    ...REGISTER_SETUP,
  ]);
  await admin.patchTunables(options.tunables, ADMIN_RETRY);
  await faults.setMessageFaults({ seed, ...options.messages }, ADMIN_RETRY);
  const replicaIds = (await admin.replicas(ADMIN_RETRY)).replicas;
  const registers = new RegisterClients({
    client: db,
    clients: options.clients,
    // Every member: after a promotion the old master is a replica, and the new one
    // is not (a read pinned to it is refused, which a read may be).
    nodes: ["master", ...members(replicaIds)],
    runTag: `${seed}-${started.toString(36)}`,
    retry: WRITE_RETRY,
  });

  // ----------------------------------------------------------------- clients
  let opsStarted = 0;
  let stopping = false;
  const until = started + options.seconds * 1000;
  const running = () => !stopping && opsStarted < options.maxOps && Date.now() < until;
  /** Recently acked values (what strong reads ask about) and values in flight. */
  const recent: string[] = [];
  const inFlight = new Set<string>();
  const counts = { acked: 0, failed: 0, unknown: 0, reads: 0 };

  const write = async (client: number, n: number, doomed: boolean) => {
    const key = `c${client}-${n}`;
    const statements = [
      { sql: `INSERT INTO ${TABLE} (k, client) VALUES (?, ?)`, params: [key, client] },
      // A statement that fails makes the whole transaction a definite failure.
      ...(doomed ? [{ sql: "INSERT INTO chaos_no_such_table (k) VALUES (?)", params: [key] }] : []),
    ];
    inFlight.add(key);
    // Every attempt is an operation of the history: the client's hooks log each one.
    let op = -1;
    try {
      const result = await db.exec(statements, {
        idempotencyKey: key,
        retry: WRITE_RETRY,
        hooks: {
          onAttempt: () => {
            op = history.invokeWrite(key, key);
          },
          onRetry: ({ error }) => history.unknown(op, describeFailure(error)),
        },
      });
      history.ok(op, { lsn: result.lsn });
      counts.acked++;
      recent.push(key);
      if (recent.length > 200) recent.shift();
    } catch (error) {
      if (op < 0) throw error;
      if (definitelyFailed(error)) {
        history.fail(op, describeFailure(error));
        counts.failed++;
      } else {
        history.unknown(op, describeFailure(error));
        counts.unknown++;
      }
    } finally {
      inFlight.delete(key);
    }
  };

  const read = async (rng: Rng) => {
    // The newest acked values (where a stale read would show), and a sample of older ones.
    const scope = new Set<string>(recent.slice(-READ_SCOPE / 2));
    for (let i = 0; i < READ_SCOPE / 2 && recent.length > 0; i++) {
      scope.add(recent[Math.floor(rng() * recent.length)] as string);
    }
    for (const key of inFlight) if (scope.size < READ_SCOPE + 4) scope.add(key);
    if (scope.size === 0) return;
    const values = [...scope];
    const op = history.invokeRead(values);
    counts.reads++;
    try {
      const res = await db.query(
        `SELECT k FROM ${TABLE} WHERE k IN (${values.map(() => "?").join(", ")})`,
        values,
        { consistency: "strong" },
      );
      const rows = res.rows as { k: string }[];
      history.ok(op, { seen: rows.map((r) => r.k), servedBy: res.servedBy });
    } catch (error) {
      history.unknown(op, describeFailure(error));
    }
  };

  const client = async (index: number) => {
    const rng = createRng(seed, "client", index);
    for (let n = 0; running(); ) {
      opsStarted++;
      const roll = rng();
      if (roll < 0.3) await registers.op(index, rng);
      else if (roll < 0.58) await read(rng);
      else await write(index, n++, roll < 0.61);
    }
  };

  // ----------------------------------------------------------------- faults
  const stopped = new Set<string>();
  const cut = new Set<string>();
  const starts: Promise<void>[] = [];
  /**
   * A heal through the master now. 404: the member is no longer one of its
   * replicas (a promotion made it master), and a cut link belonged to the old
   * master's relays: nothing is left to heal.
   */
  const heal = async (id: string, route: "restore" | "start" | "connect") => {
    const call =
      route === "restore"
        ? faults.restoreMember(id, ADMIN_RETRY)
        : route === "start"
          ? faults.startReplica(id, ADMIN_RETRY)
          : faults.connectReplica(id, ADMIN_RETRY);
    await call.catch((error: unknown) => {
      if (!(error instanceof NotFoundError)) throw error;
    });
  };
  const lost = new Set<string>();
  const restoreMember = async (id: string) => {
    if (!lost.has(id)) return;
    await heal(id, "restore");
    lost.delete(id);
  };
  const startReplica = async (id: string) => {
    if (!stopped.has(id)) return;
    await heal(id, "start");
    stopped.delete(id);
  };
  const connectReplica = async (id: string) => {
    if (!cut.has(id)) return;
    await heal(id, "connect");
    cut.delete(id);
  };
  /** Whether status names a master other than `old` within `ms` (automatic promotion). */
  const newMasterWithin = async (old: string, ms: number): Promise<boolean> => {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      await sleep(200);
      const master = (await admin.status().catch(() => null))?.master.id;
      if (master !== undefined && master !== old) return true;
    }
    log(`automatic promotion: no new master ${ms} ms after ${old} was lost; promoting by hand`);
    return false;
  };

  const faultLoop = async () => {
    const rng = createRng(seed, "faults");
    const kinds = [
      ...(options.masterCrashes ? ["masterCrash"] : []),
      ...(options.replicaStops ? ["replicaStop"] : []),
      ...(options.replicaCrashes ? ["replicaCrash"] : []),
      ...(options.partitions ? ["partition"] : []),
      // Twice: a promotion is refused now and then (no coherent candidate at that moment).
      ...(options.promotions ? ["promotion", "promotion"] : []),
      ...(options.masterLosses ? ["masterLoss"] : []),
    ];
    let replicasNow = replicaIds;
    let round: string[] = [];
    while (running() && kinds.length > 0) {
      await sleep(options.faultEveryMs * (0.5 + rng()));
      if (!running()) return;
      // Kinds come in seeded shuffles of the whole list: every kind occurs in every round.
      if (round.length === 0) round = shuffled(kinds, rng);
      const kind = round.pop();
      // The replicas of the master now: a promotion changes who they are.
      const listed = await answered(admin.replicas(ADMIN_RETRY));
      if (listed !== null) replicasNow = listed.replicas;
      const id = replicasNow[Math.floor(rng() * replicasNow.length)] as string;
      const midBatch = rng() < 0.7;
      const downMs = 300 + rng() * 2700;
      if (kind === "masterCrash") {
        if ((await answered(faults.crashMaster(ADMIN_RETRY))) !== null) tally.masterCrash++;
      } else if (kind === "replicaStop" && !stopped.has(id) && stopped.size < 2) {
        if ((await answered(faults.stopReplica(id, ADMIN_RETRY))) !== null) {
          stopped.add(id);
          tally.replicaStop++;
          starts.push(sleep(downMs).then(() => startReplica(id)));
        }
      } else if (kind === "partition" && !cut.has(id) && cut.size < 2) {
        if ((await answered(faults.disconnectReplica(id, ADMIN_RETRY))) !== null) {
          cut.add(id);
          tally.partition++;
          starts.push(sleep(downMs).then(() => connectReplica(id)));
        }
      } else if (kind === "promotion") {
        const body = rng() < 0.5 ? {} : { replica: id };
        // Once: a refusal (503) is an outcome, not a reason to promote again.
        try {
          await admin.promote(body);
          tally.promotion++;
        } catch (error) {
          log(`promotion refused: ${describeFailure(error)} ${String(error).slice(0, 300)}`);
        }
      } else if (kind === "masterLoss" && lost.size === 0) {
        const id = (await answered(faults.loseMaster(ADMIN_RETRY)))?.lost;
        if (id !== undefined) {
          lost.add(id);
          tally.masterLoss++;
          const automatic = Number(options.tunables.master_failover_ms ?? 0) > 0;
          // Every other loss (the first included): the replicas promote one of them.
          if (automatic && tally.masterLoss % 2 === 1 && (await newMasterWithin(id, 15_000))) {
            tally.autoPromotion++;
            starts.push(sleep(downMs).then(() => restoreMember(id)));
            continue;
          }
          // Promoted without it (the promote route finds it does not answer).
          await admin.promote().catch((error: unknown) => {
            log(
              `promotion without the lost master refused: ${describeFailure(error)} ${String(error).slice(0, 300)}`,
            );
          });
          starts.push(sleep(downMs).then(() => restoreMember(id)));
        }
      } else if (kind === "replicaCrash") {
        const crashed = await answered(faults.crashReplica(id, { midBatch }, ADMIN_RETRY));
        if (crashed !== null) tally[midBatch ? "midBatchCrash" : "replicaCrash"]++;
      }
    }
  };

  const monitor = async () => {
    let last = Date.now();
    while (!stopping) {
      await sleep(250);
      if (Date.now() - last < 1000) continue;
      last = Date.now();
      try {
        noteFaults(await status());
      } catch {
        // The master is restarting; the next look counts.
      }
      const secs = Math.round((Date.now() - started) / 1000);
      log(
        `${secs}s: ops ${opsStarted}, acked ${counts.acked}, failed ${counts.failed}, reads ${counts.reads}, register ops ${registers.completed}, in flight ${inFlight.size}, faults ${JSON.stringify(totalFaults())}`,
      );
    }
  };

  const totalFaults = (): FaultTally => {
    const out: FaultTally = { ...tally };
    for (const injected of byEpoch.values()) {
      for (const [kind, n] of Object.entries(injected)) {
        // The master counts replica crashes too; the run's own tally is the one reported.
        if (kind !== "replicaCrash") out[kind] = (out[kind] ?? 0) + n;
      }
    }
    return out;
  };

  log(`chaos: seed ${seed}, cluster ${cluster}, ${options.clients} clients`);
  const watcher = monitor();
  await Promise.all([faultLoop(), ...Array.from({ length: options.clients }, (_, i) => client(i))]);
  log(`healing: ${opsStarted} operations started in ${Math.round((Date.now() - started) / 1000)}s`);

  // ----------------------------------------------------------------- heal
  noteFaults(await status());
  await faults.setMessageFaults({ seed }, ADMIN_RETRY);
  await Promise.all(starts);
  for (const id of [...stopped]) await startReplica(id);
  for (const id of [...cut]) await connectReplica(id);
  for (const id of [...lost]) await restoreMember(id);
  const unrecovered = await converge(status, noteFaults, options.convergeMs);
  stopping = true;
  await watcher;
  const verify = await admin.verify(ADMIN_RETRY);
  const nodes: NodeRows[] = [];
  const finalReplicas = (await admin.replicas(ADMIN_RETRY)).replicas;
  for (const node of ["master", ...finalReplicas]) nodes.push(await readAll(db, node));
  const check = checkHistory({ events: history.events, nodes, verify });
  const events = registers.history.events;
  const linearizability = checkLinearizability(operationsFromHistory(events));
  return {
    seed,
    seconds: Math.round((Date.now() - started) / 100) / 10,
    check,
    faults: totalFaults(),
    catchUp: [...catchUpByEpoch.values()].reduce(
      (sum, c) => ({
        snapshots: sum.snapshots + c.snapshots,
        pullBatches: sum.pullBatches + c.pullBatches,
      }),
      { snapshots: 0, pullBatches: 0 },
    ),
    unrecovered,
    history,
    registers: { events, counts: registers.counts },
    linearizability,
  };
}

function shuffled<T>(items: readonly T[], rng: Rng): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** Every member of a cluster whose first master is node-0. */
function members(replicaIds: readonly string[]): string[] {
  return ["node-0", ...replicaIds];
}

/** Waits until every replica is coherent at the master's LSN; returns those that never got there. */
async function converge(
  status: () => Promise<Status>,
  noteFaults: (s: Status) => void,
  timeoutMs: number,
): Promise<string[]> {
  const until = Date.now() + timeoutMs;
  let behind: string[] = ["(no status)"];
  while (Date.now() < until) {
    try {
      const s = await status();
      noteFaults(s);
      behind = s.replicas
        .filter((r) => r.state !== "coherent" || r.ackedLsn !== s.master.lsn)
        .map((r) => `${r.id} ${r.state} at ${r.ackedLsn} of ${s.master.lsn}`);
      if (behind.length === 0) return [];
    } catch {
      // The master may still be restarting.
    }
    await sleep(200);
  }
  return behind;
}

/** Every value on one node (the master or a pinned replica), paged by rowid. */
async function readAll(db: DosqliteClient, node: string): Promise<NodeRows> {
  const values: string[] = [];
  for (let after = 0; ; ) {
    const res = await db
      .query(`SELECT id, k FROM ${TABLE} WHERE id > ? ORDER BY id LIMIT 2000`, [after], {
        consistency: "any",
        replica: node,
      })
      .catch((error: unknown) => {
        throw new Error(`read back from ${node}: ${String(error)}`);
      });
    const rows = res.rows as { id: number; k: string }[];
    if (rows.length === 0) return { node, values };
    for (const row of rows) values.push(row.k);
    after = rows[rows.length - 1]?.id ?? after;
  }
}
