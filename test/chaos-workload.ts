/**
 * The randomized fault run shared by the CI test (test/chaos.test.ts, inside
 * workerd) and `npm run chaos` (scripts/chaos.ts, against `wrangler dev`).
 *
 * Concurrent clients insert unique values with an Idempotency-Key (retrying
 * with the same key while the outcome is unknown) and make strong reads of
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
import { type CheckReport, checkHistory, History, type NodeRows } from "../core/history";
import { checkLinearizability, type LinearizabilityReport } from "../core/linearizability";
import { createRng, type MessageFaultConfig, type Rng } from "../core/message-faults";
import { operationsFromHistory, type RegisterHistoryEvent } from "../core/register-history";
import { REGISTER_SETUP, RegisterClients } from "./chaos-registers";

/** One HTTP call through the front door; throws only when no answer came back. */
export type Send = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<{ status: number; body: unknown }>;

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
  send: Send;
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
const MAX_ATTEMPTS = 40;
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
  const { cluster, seed, send } = options;
  const log = options.log ?? (() => {});
  const history = new History();
  const started = Date.now();
  const base = `/v1/clusters/${cluster}`;
  const admin = `/admin/clusters/${cluster}`;
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

  /** Admin calls are retried: the master may be restarting. */
  const adminCall = async (method: string, path: string, body?: unknown) => {
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await send(method, `${admin}${path}`, body);
        if (res.status < 500 || attempt >= 20) return res;
      } catch (error) {
        if (attempt >= 20) throw error;
      }
      await sleep(100);
    }
  };
  const mustAdmin = async (method: string, path: string, body?: unknown) => {
    const res = await adminCall(method, path, body);
    if (res.status >= 300) {
      throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    }
    return res.body;
  };
  const status = async () => (await mustAdmin("GET", "/status")) as Status;
  const noteFaults = (s: Status) => {
    const incarnation = `${s.master.id}:${s.master.epoch}`;
    if (s.faults !== undefined) byEpoch.set(incarnation, { ...s.faults.injected });
    catchUpByEpoch.set(incarnation, {
      snapshots: s.replicas.reduce((n, r) => n + (r.snapshots ?? 0), 0),
      pullBatches: s.replicas.reduce((n, r) => n + (r.pullBatches ?? 0), 0),
    });
  };

  // ----------------------------------------------------------------- setup
  const ddl = await send("POST", `${base}/exec`, {
    statements: [
      {
        sql: `CREATE TABLE IF NOT EXISTS ${TABLE} (id INTEGER PRIMARY KEY, k TEXT NOT NULL, client INTEGER)`,
      },
      { sql: `CREATE INDEX IF NOT EXISTS ${TABLE}_k ON ${TABLE} (k)` },
      ...REGISTER_SETUP,
    ],
  });
  if (ddl.status !== 200)
    throw new Error(`create table: ${ddl.status} ${JSON.stringify(ddl.body)}`);
  await mustAdmin("PATCH", "/tunables", options.tunables);
  await mustAdmin("POST", "/faults", { seed, ...options.messages });
  const replicaIds = ((await mustAdmin("GET", "/replicas")) as { replicas: string[] }).replicas;
  const registers = new RegisterClients({
    send,
    base,
    clients: options.clients,
    // Every member: after a promotion the old master is a replica, and the new one
    // is not (a read pinned to it is refused, which a read may be).
    nodes: ["master", ...members(replicaIds)],
    runTag: `${seed}-${started.toString(36)}`,
    maxAttempts: MAX_ATTEMPTS,
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
    try {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        if (attempt > 0) await sleep(Math.min(500, 20 * 2 ** attempt));
        const op = history.invokeWrite(key, key);
        let res: { status: number; body: unknown };
        try {
          res = await send("POST", `${base}/exec`, { statements }, { "idempotency-key": key });
        } catch (error) {
          history.unknown(op, `no answer: ${String(error)}`);
          continue;
        }
        if (res.status === 200) {
          history.ok(op, { lsn: (res.body as { lsn: number }).lsn });
          counts.acked++;
          recent.push(key);
          if (recent.length > 200) recent.shift();
          return;
        }
        const code = (res.body as { error?: { code?: string } }).error?.code ?? "?";
        if (res.status >= 400 && res.status < 500) {
          history.fail(op, `${res.status} ${code}`);
          counts.failed++;
          return;
        }
        history.unknown(op, `${res.status} ${code}`);
      }
      counts.unknown++;
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
      const res = await send("POST", `${base}/query`, {
        sql: `SELECT k FROM ${TABLE} WHERE k IN (${values.map(() => "?").join(", ")})`,
        params: values,
        consistency: "strong",
      });
      if (res.status !== 200) {
        history.unknown(op, `${res.status}`);
        return;
      }
      const body = res.body as { rows: { k: string }[]; servedBy: string };
      history.ok(op, { seen: body.rows.map((r) => r.k), servedBy: body.servedBy });
    } catch (error) {
      history.unknown(op, String(error));
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
  const heal = async (id: string, route: string) => {
    const path = route === "restore" ? `/members/${id}/restore` : `/replicas/${id}/${route}`;
    const res = await adminCall("POST", path);
    if (res.status >= 300 && res.status !== 404) {
      throw new Error(`POST /replicas/${id}/${route}: ${res.status} ${JSON.stringify(res.body)}`);
    }
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
      const res = await send("GET", `${admin}/status`).catch(() => null);
      const master = (res?.body as { master?: { id?: string } } | undefined)?.master?.id;
      if (res?.status === 200 && master !== undefined && master !== old) return true;
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
      const listed = await adminCall("GET", "/replicas");
      if (listed.status === 200) replicasNow = (listed.body as { replicas: string[] }).replicas;
      const id = replicasNow[Math.floor(rng() * replicasNow.length)] as string;
      const midBatch = rng() < 0.7;
      const downMs = 300 + rng() * 2700;
      if (kind === "masterCrash") {
        if ((await adminCall("POST", "/master/crash")).status === 202) tally.masterCrash++;
      } else if (kind === "replicaStop" && !stopped.has(id) && stopped.size < 2) {
        if ((await adminCall("POST", `/replicas/${id}/stop`)).status === 200) {
          stopped.add(id);
          tally.replicaStop++;
          starts.push(sleep(downMs).then(() => startReplica(id)));
        }
      } else if (kind === "partition" && !cut.has(id) && cut.size < 2) {
        if ((await adminCall("POST", `/replicas/${id}/disconnect`)).status === 200) {
          cut.add(id);
          tally.partition++;
          starts.push(sleep(downMs).then(() => connectReplica(id)));
        }
      } else if (kind === "promotion") {
        const body = rng() < 0.5 ? {} : { replica: id };
        // Once: a refusal (503) is an outcome, not a reason to promote again.
        const res = await send("POST", `${admin}/promote`, body).catch((error: unknown) => ({
          status: 0,
          body: String(error),
        }));
        if (res.status === 200) tally.promotion++;
        else log(`promotion refused: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      } else if (kind === "masterLoss" && lost.size === 0) {
        const res = await adminCall("POST", "/master/lose");
        const id = (res.body as { lost?: string }).lost;
        if (res.status === 202 && id !== undefined) {
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
          const promoted = await send("POST", `${admin}/promote`, {}).catch((error: unknown) => ({
            status: 0,
            body: String(error),
          }));
          if (promoted.status !== 200) {
            log(
              `promotion without the lost master refused: ${promoted.status} ${JSON.stringify(promoted.body).slice(0, 300)}`,
            );
          }
          starts.push(sleep(downMs).then(() => restoreMember(id)));
        }
      } else if (kind === "replicaCrash") {
        const res = await adminCall("POST", `/replicas/${id}/crash`, { midBatch });
        if (res.status === 202) tally[midBatch ? "midBatchCrash" : "replicaCrash"]++;
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
  await mustAdmin("POST", "/faults", { seed });
  await Promise.all(starts);
  for (const id of [...stopped]) await startReplica(id);
  for (const id of [...cut]) await connectReplica(id);
  for (const id of [...lost]) await restoreMember(id);
  const unrecovered = await converge(status, noteFaults, options.convergeMs);
  stopping = true;
  await watcher;
  const verify = (await mustAdmin("POST", "/verify")) as {
    agree: boolean;
    mismatches: string[];
  };
  const nodes: NodeRows[] = [];
  const finalReplicas = ((await mustAdmin("GET", "/replicas")) as { replicas: string[] }).replicas;
  for (const node of ["master", ...finalReplicas]) nodes.push(await readAll(send, base, node));
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
async function readAll(send: Send, base: string, node: string): Promise<NodeRows> {
  const values: string[] = [];
  for (let after = 0; ; ) {
    const res = await send("POST", `${base}/query`, {
      sql: `SELECT id, k FROM ${TABLE} WHERE id > ? ORDER BY id LIMIT 2000`,
      params: [after],
      consistency: "any",
      replica: node,
    });
    if (res.status !== 200) {
      throw new Error(`read back from ${node}: ${res.status} ${JSON.stringify(res.body)}`);
    }
    const rows = (res.body as { rows: { id: number; k: string }[] }).rows;
    if (rows.length === 0) return { node, values };
    for (const row of rows) values.push(row.k);
    after = rows[rows.length - 1]?.id ?? after;
  }
}
