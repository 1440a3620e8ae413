/**
 * The in-runtime load driver: clients that call the master by DO RPC exactly
 * as the front door does (same request, same Idempotency-Key hashing), each
 * inserting single rows into its own table with one insert in flight. It
 * measures the replication design without the dev server's HTTP proxy, which
 * caps HTTP throughput on small machines.
 */

import { DurableObject } from "cloudflare:workers";
import type { Result } from "../core/errors";
import { type ExecResponse, isMasterCrash } from "../core/protocol";
import { FIRST_MASTER } from "../core/members";
import { sha256Hex } from "../core/sha256";
import { masterRecord, memberStub } from "../workers/cluster";
import { CostProbe } from "./cost-probe";
import { TABLES_PER_REQUEST } from "./setup-batch";
import type { CostRequest } from "./cost-types";
import { ReadLoad } from "./read-load";
import type { ReadRunRequest, ReadRunResult } from "./read-types";
import { type LoadSummary, summarizeLoad } from "./stats";

export interface RunRequest {
  cluster: string;
  clients: number;
  seconds: number;
  warmupSeconds: number;
  /** Distinguishes the tables of successive runs on one cluster. */
  tag: string;
  /** Each insert also writes a text of this many bytes (0 or absent: the bare integer). */
  rowBytes?: number;
}

/** A run during which the driver itself crashes the master (seed experiment 6). */
export interface CrashRunRequest {
  cluster: string;
  clients: number;
  tag: string;
  /** Load before the crash (warm-up included), and after it. */
  beforeSeconds: number;
  afterSeconds: number;
}

export interface CrashRunResult {
  tables: string[];
  /** Acknowledged values of column v, by table. */
  acked: Record<string, number[]>;
  /** [sent, answered] times (ms) of every acknowledged insert's last attempt. */
  successes: [number, number][];
  startedAt: number;
  crashAt: number;
  endAt: number;
  retriedRequests: number;
  resends: number;
  replayed: number;
  failed: number;
  firstFailure: string | null;
}

/** Outcomes a client resends with the same Idempotency-Key: the insert may or may not be written. */
const UNKNOWN_OUTCOME = new Set(["UNAVAILABLE", "COMMIT_TIMEOUT", "NOT_DURABLE"]);
const MAX_ATTEMPTS = 40;

export type RunResult = LoadSummary<"in-runtime"> & {
  /** Wall-clock ms of the measured window: after the warm-up, until the last insert returned. */
  measuredFrom: number;
  measuredTo: number;
};

const createTable = (table: string) => `CREATE TABLE ${table} (id INTEGER PRIMARY KEY, v INTEGER)`;

export class BenchDriver extends DurableObject<Env> {
  private stopRequested = false;

  /** Which member each cluster's master is, asked of the directory when a run begins. */
  private readonly masters = new Map<string, string>();

  private async locate(cluster: string): Promise<void> {
    this.masters.set(cluster, (await masterRecord(this.env, cluster, true)).master);
  }

  private master(cluster: string) {
    return memberStub(this.env, cluster, this.masters.get(cluster) ?? FIRST_MASTER);
  }

  /** One DDL statement per table, TABLES_PER_REQUEST to a transaction. */
  private async forEachTable(
    cluster: string,
    tables: string[],
    statement: (table: string) => string,
  ): Promise<void> {
    await this.locate(cluster);
    for (let i = 0; i < tables.length; i += TABLES_PER_REQUEST) {
      const done = (await this.master(cluster).exec({
        cluster,
        kind: "exec",
        statements: tables
          .slice(i, i + TABLES_PER_REQUEST)
          .map((table) => ({ sql: statement(table), params: [] })),
      })) as Result<ExecResponse>;
      if (!done.ok) throw new Error(done.error.message);
    }
  }

  /**
   * Clients insert for `beforeSeconds`, the driver crashes the master through
   * its fault hook, and they go on for `afterSeconds`. An insert whose outcome
   * is unknown (the call threw, or an error that says "retry") is resent with
   * the same Idempotency-Key (on a new stub if the call threw); every
   * acknowledged insert is kept.
   */
  async crashRun(request: CrashRunRequest): Promise<CrashRunResult> {
    await this.locate(request.cluster);
    const tables = Array.from({ length: request.clients }, (_, i) => `k_${request.tag}_${i}`);
    await this.forEachTable(request.cluster, tables, createTable);
    const result: CrashRunResult = {
      tables,
      acked: Object.fromEntries(tables.map((t) => [t, []])),
      successes: [],
      startedAt: Date.now(),
      crashAt: 0,
      endAt: 0,
      retriedRequests: 0,
      resends: 0,
      replayed: 0,
      failed: 0,
      firstFailure: null,
    };
    const crashAt = result.startedAt + request.beforeSeconds * 1000;
    const until = crashAt + request.afterSeconds * 1000;
    const fail = (why: string) => {
      result.failed++;
      result.firstFailure ??= why;
    };
    // A stub per client, as in run(), replaced after a call that threw (as a
    // client reconnects after a broken connection).
    const stubs = new Map(tables.map((t) => [t, this.master(request.cluster)]));
    const insert = async (table: string, n: number) => {
      const statements = [{ sql: `INSERT INTO "${table}" ("v") VALUES (?)`, params: [BigInt(n)] }];
      const requestHash = sha256Hex(
        `rows\n${table}\n${JSON.stringify(statements, (_, v) => (typeof v === "bigint" ? String(v) : v))}`,
      );
      for (let attempt = 1; ; attempt++) {
        const sentAt = Date.now();
        let outcome: string;
        try {
          const stub = stubs.get(table) ?? this.master(request.cluster);
          const answer = (await stub.exec({
            cluster: request.cluster,
            kind: "rows",
            statements,
            idempotencyKey: `${table}-${n}`,
            requestHash,
          })) as Result<ExecResponse>;
          if (answer.ok) {
            result.acked[table]?.push(n);
            result.successes.push([sentAt, Date.now()]);
            if (answer.value.replayed === true) result.replayed++;
            return;
          }
          if (!UNKNOWN_OUTCOME.has(answer.error.code)) {
            fail(`${answer.error.code}: ${answer.error.message}`);
            return;
          }
          outcome = answer.error.code;
        } catch (error) {
          outcome = String(error);
          stubs.set(table, this.master(request.cluster));
        }
        if (attempt >= MAX_ATTEMPTS) {
          fail(`gave up after ${attempt} attempts: ${outcome}`);
          return;
        }
        if (attempt === 1) result.retriedRequests++;
        result.resends++;
        // Resent at once: the call itself waits while the reset object starts
        // again. A timer here would be no backoff at all: under this driver's
        // load its timers fire only when the load ends (sleeps of 50 ms
        // overran by 5.3 s), which kept the clients asleep through the recovery.
      }
    };
    // The first client to see the time fires the crash: timers starve under this load.
    let crash: Promise<void> | null = null;
    const fireCrash = async () => {
      try {
        const refused = (await this.master(request.cluster).crash(
          request.cluster,
        )) as Result<unknown>;
        throw new Error(refused.ok ? "the master did not reset" : refused.error.message);
      } catch (error) {
        // The reset throws its reason into the crash call: it has happened.
        if (!isMasterCrash(error)) throw error;
      }
      result.crashAt = Date.now();
    };
    await Promise.all(
      tables.map(async (table) => {
        for (let n = 0; Date.now() < until; n++) {
          if (crash === null && Date.now() >= crashAt) crash = fireCrash();
          await insert(table, n);
        }
      }),
    );
    await crash;
    result.endAt = until;
    return result;
  }

  /** Ends a running `run` early: its clients finish the insert in flight and stop. */
  async stop(): Promise<void> {
    this.stopRequested = true;
  }

  private probe: CostProbe | null = null;

  /** bench/cost-probe.ts: an operation run `n` times on this object's own SQLite. */
  costs(request: CostRequest): Promise<number> {
    this.probe ??= new CostProbe(this.ctx.storage);
    return this.probe.run(request);
  }

  /**
   * Read latencies by target and consistency, one cell after another, while
   * `writers` clients insert for the whole run (bench/read-load.ts).
   */
  async reads(request: ReadRunRequest): Promise<ReadRunResult> {
    const load = new ReadLoad(this.env, request.cluster);
    await load.seed();
    const writing =
      request.writers === 0
        ? null
        : this.run(
            {
              cluster: request.cluster,
              clients: request.writers,
              seconds: 3_600,
              warmupSeconds: 0,
              tag: request.tag,
            },
            (lsn) => load.acked(lsn),
          );
    const cells = await load.cells(request);
    this.stopRequested = true;
    const written = writing === null ? null : await writing;
    return { writers: request.writers, insertsPerSecond: written?.insertsPerSecond ?? 0, cells };
  }

  /** `onAcked` (in-process callers only) hears the LSN of every acknowledged insert. */
  async run(request: RunRequest, onAcked?: (lsn: number) => void): Promise<RunResult> {
    await this.locate(request.cluster);
    this.stopRequested = false;
    const tables = Array.from({ length: request.clients }, (_, i) => `b_${request.tag}_${i}`);
    const rowBytes = request.rowBytes ?? 0;
    await this.forEachTable(
      request.cluster,
      tables,
      rowBytes > 0
        ? (t) => `CREATE TABLE ${t} (id INTEGER PRIMARY KEY, v INTEGER, body TEXT)`
        : createTable,
    );
    const latencies: number[] = [];
    const errors: string[] = [];
    const startedAt = Date.now();
    const warmupUntil = startedAt + request.warmupSeconds * 1000;
    const until = warmupUntil + request.seconds * 1000;
    const perSecond: number[] = [];

    const client = async (table: string) => {
      // A stub per client, as the front door makes per request: calls on one
      // shared stub queue behind each other and starve every other caller.
      const master = this.master(request.cluster);
      for (let n = 0; Date.now() < until && !this.stopRequested; n++) {
        const statements =
          rowBytes > 0
            ? [
                {
                  sql: `INSERT INTO "${table}" ("v", "body") VALUES (?, ?)`,
                  // Each row's text differs, as a client's would.
                  params: [BigInt(n), `${n}:`.padEnd(rowBytes, "x")],
                },
              ]
            : [{ sql: `INSERT INTO "${table}" ("v") VALUES (?)`, params: [BigInt(n)] }];
        const key = `${table}-${n}`;
        const requestHash = sha256Hex(
          `rows\n${table}\n${JSON.stringify(statements, (_, v) => (typeof v === "bigint" ? String(v) : v))}`,
        );
        const started = performance.now();
        // Decided when the insert starts: timers can starve under load, flags set by them lag.
        const measuring = Date.now() >= warmupUntil;
        try {
          const result = (await master.exec({
            cluster: request.cluster,
            kind: "rows",
            statements,
            idempotencyKey: key,
            requestHash,
          })) as Result<ExecResponse>;
          if (!result.ok) errors.push(result.error.message);
          else {
            onAcked?.(result.value.lsn);
            if (measuring) latencies.push(performance.now() - started);
            const second = Math.floor((Date.now() - startedAt) / 1000);
            perSecond[second] = (perSecond[second] ?? 0) + 1;
          }
        } catch (error) {
          errors.push(String(error));
        }
      }
    };
    await Promise.all(tables.map(client));
    const measuredTo = Date.now();
    const measured = (measuredTo - startedAt) / 1000 - request.warmupSeconds;
    // Points share a cluster, and SQLite's DDL cost grows with the schema: tables
    // left behind made each later point's set-up slower than the one before.
    await this.forEachTable(request.cluster, tables, (table) => `DROP TABLE ${table}`);
    return {
      ...summarizeLoad("in-runtime", request.clients, measured, latencies, errors),
      perSecond: Array.from(perSecond, (n) => n ?? 0),
      measuredFrom: warmupUntil,
      measuredTo,
    };
  }
}
