/**
 * The chaos run's register keys, beside its unique-value inserts: clients
 * write, compare-and-set and strongly read a handful of keys of one table,
 * each read pinned to the next node in turn (the master, then every replica),
 * and the register history they leave (core/register-history.ts) is checked
 * for linearizability at the end.
 *
 * Every value written is new to the run, so a read names the write it saw. A
 * write or cas keeps one Idempotency-Key over its retries, so it is one
 * operation from its first attempt to its last answer, and takes effect at
 * most once; still unknown after every attempt, it is `info`. A pinned replica
 * that may not serve a strong read answers 503 UNAVAILABLE: the read failed
 * and observed nothing.
 */
import { type DosqliteClient, type RetryPolicy, UnavailableError } from "../client/index.ts";
import type { Rng } from "../core/message-faults";
import { type OpenOperation, RegisterHistory } from "../core/register-history";
import { definitelyFailed, describeFailure } from "./chaos-outcomes";

export const REGISTER_KEYS = ["r0", "r1", "r2"];

/** Run once before any client starts: every key then holds no value, as the checker assumes. */
export const REGISTER_SETUP = [
  { sql: "CREATE TABLE IF NOT EXISTS reg (k TEXT PRIMARY KEY, v INTEGER NOT NULL)" },
  // A cluster reused from an earlier run (--cluster, --url) keeps its rows.
  { sql: "DELETE FROM reg" },
];

const WRITE = "INSERT INTO reg (k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v";
const CAS = "UPDATE reg SET v = ? WHERE k = ? AND v = ?";
const READ = "SELECT v FROM reg WHERE k = ?";

export interface RegisterOptions {
  /** The run's cluster (its calls carry their own retry policy). */
  client: DosqliteClient;
  clients: number;
  /** Where strong reads are pinned, in turn: "master" and every replica id. */
  nodes: readonly string[];
  /** Makes Idempotency-Keys unique to this run. */
  runTag: string;
  /** How a write or cas is resent while its outcome is unknown. */
  retry: RetryPolicy;
}

interface ExecBody {
  results: { rowsWritten: number }[];
}

type ExecOutcome = { kind: "ok"; body: ExecBody } | { kind: "fail" | "unknown"; error: string };

export class RegisterClients {
  readonly history: RegisterHistory;
  /** Completed operations by kind and outcome, for the progress line and the wiring check. */
  readonly counts = {
    reads: 0,
    readsRefused: 0,
    writes: 0,
    refused: 0,
    cas: 0,
    casMissed: 0,
    unknown: 0,
  };
  get completed(): number {
    return Object.values(this.counts).reduce((sum, n) => sum + n, 0);
  }

  private nextValue = 1;
  private nextPin = 0;
  /** The newest value any client saw per key: what a cas expects. */
  private readonly latest = new Map<string, number>();

  constructor(private readonly options: RegisterOptions) {
    this.history = new RegisterHistory(options.clients);
  }

  /** One operation of `client` on a random key: a strong read, a cas or a write. */
  async op(client: number, rng: Rng): Promise<void> {
    const key = REGISTER_KEYS[Math.floor(rng() * REGISTER_KEYS.length)] as string;
    const roll = rng();
    if (roll < 0.45) {
      // Half the time the client reads the key again from the next node at once: a newer
      // value on one node, then an older one on another, is the anomaly leases can allow.
      if ((await this.read(client, key)) && rng() < 0.5) await this.read(client, key);
      return;
    }
    const expected = this.latest.get(key);
    if (roll < 0.75 && expected !== undefined) return this.cas(client, key, expected);
    // A few writes fail on purpose: a definite failure must leave no trace.
    return this.write(client, key, roll > 0.97);
  }

  /** True when the read returned a value (or none: the key was empty). */
  private async read(client: number, key: string): Promise<boolean> {
    const { nodes, client: db } = this.options;
    const node = nodes[this.nextPin++ % nodes.length] as string;
    const op = this.history.invoke(client, { f: "read", key, value: null }, node);
    let res: { rows: Record<string, unknown>[]; servedBy: string };
    try {
      // One attempt: a read that is refused has failed, and observed nothing.
      res = await db.query(READ, [key], { consistency: "strong", replica: node, retry: false });
    } catch (error) {
      if (error instanceof UnavailableError) {
        this.counts.readsRefused++;
        this.history.fail(op, describeFailure(error));
        return false;
      }
      this.counts.unknown++;
      this.history.info(op, describeFailure(error));
      return false;
    }
    const value = (res.rows[0]?.v as number | undefined) ?? null;
    if (value !== null) this.latest.set(key, value);
    this.counts.reads++;
    this.history.ok(op, { value, node: res.servedBy });
    return true;
  }

  private async write(client: number, key: string, doomed: boolean): Promise<void> {
    const value = this.nextValue++;
    const op = this.history.invoke(client, { f: "write", key, value });
    const outcome = await this.exec(`w${value}`, [
      { sql: WRITE, params: [key, value] },
      ...(doomed ? [{ sql: "INSERT INTO chaos_no_such_table (k) VALUES (?)", params: [key] }] : []),
    ]);
    if (outcome.kind === "ok") {
      this.latest.set(key, value);
      this.counts.writes++;
      return this.history.ok(op);
    }
    this.complete(op, outcome);
  }

  private async cas(client: number, key: string, expected: number): Promise<void> {
    const value = this.nextValue++;
    const op = this.history.invoke(client, { f: "cas", key, value: [expected, value] });
    const outcome = await this.exec(`c${value}`, [{ sql: CAS, params: [value, key, expected] }]);
    if (outcome.kind !== "ok") return this.complete(op, outcome);
    const rows = outcome.body.results[0]?.rowsWritten;
    if (rows === 1) {
      this.latest.set(key, value);
      this.counts.cas++;
      return this.history.ok(op);
    }
    if (rows !== 0) throw new Error(`cas on ${key} wrote ${rows} rows`);
    // It ran and found another value: a definite failure that observed something.
    this.counts.casMissed++;
    this.history.fail(op);
  }

  private complete(op: OpenOperation, outcome: Exclude<ExecOutcome, { kind: "ok" }>): void {
    if (outcome.kind === "fail") {
      this.counts.refused++;
      this.history.fail(op, outcome.error);
    } else {
      this.counts.unknown++;
      this.history.info(op, outcome.error);
    }
  }

  /** One write transaction, retried under one Idempotency-Key while its outcome is unknown. */
  private async exec(
    name: string,
    statements: { sql: string; params: (string | number)[] }[],
  ): Promise<ExecOutcome> {
    const { client: db, runTag, retry } = this.options;
    try {
      const body = await db.exec(statements, { idempotencyKey: `reg-${runTag}-${name}`, retry });
      return { kind: "ok", body };
    } catch (error) {
      const kind = definitelyFailed(error) ? "fail" : "unknown";
      return { kind, error: describeFailure(error) };
    }
  }
}
