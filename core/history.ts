/**
 * A history of client operations and the checker that judges it (Jepsen's
 * shape, for this cluster's promises). The recorder logs every attempt: its
 * invocation, then ok (with the LSN), a definite failure (the request was
 * refused, nothing was written) or unknown (a timeout, a reset, a 5xx: it may
 * or may not have been written). Writes insert one unique value each, under
 * an Idempotency-Key that its retries reuse. After the run, every node's rows
 * are read back and the checker finds:
 *
 * - lost: an acked write missing on the master or on a coherent replica;
 * - duplicated: a value present more than once on a node, or two acks of one
 *   key with different LSNs (a retry executed twice);
 * - failedPresent: a write answered with a definite failure that is present;
 * - staleReads: a strong read that missed a write acked before it began;
 * - diverged: nodes that do not agree (verify, or their rows differ);
 * - unexpected: a value no write ever sent.
 */

export type HistoryEvent =
  | { type: "invoke"; op: number; at: number; f: "write"; key: string; value: string }
  | { type: "invoke"; op: number; at: number; f: "read"; values: string[] }
  | { type: "ok"; op: number; at: number; lsn?: number; seen?: string[]; servedBy?: string }
  | { type: "fail"; op: number; at: number; error: string }
  | { type: "unknown"; op: number; at: number; error: string };

/** Records events in the order they happen, with the caller's clock. */
export class History {
  readonly events: HistoryEvent[] = [];
  private next = 0;

  constructor(private readonly now: () => number = () => Date.now()) {}

  /** A write attempt: inserts `value` under Idempotency-Key `key`. */
  invokeWrite(key: string, value: string): number {
    const op = this.next++;
    this.events.push({ type: "invoke", op, at: this.now(), f: "write", key, value });
    return op;
  }

  /** A strong read of the rows holding `values` (the values it asks about). */
  invokeRead(values: string[]): number {
    const op = this.next++;
    this.events.push({ type: "invoke", op, at: this.now(), f: "read", values });
    return op;
  }

  ok(op: number, result: { lsn?: number; seen?: string[]; servedBy?: string } = {}): void {
    this.events.push({ type: "ok", op, at: this.now(), ...result });
  }

  fail(op: number, error: string): void {
    this.events.push({ type: "fail", op, at: this.now(), error });
  }

  unknown(op: number, error: string): void {
    this.events.push({ type: "unknown", op, at: this.now(), error });
  }
}

/** One node's rows after the run: every value, as often as it is present. */
export interface NodeRows {
  node: string;
  values: string[];
}

export interface CheckInput {
  events: readonly HistoryEvent[];
  /** The master's rows and every coherent replica's, read once the cluster converged. */
  nodes: readonly NodeRows[];
  /** The verify verdict at the end (checksums on every node). */
  verify: { agree: boolean; mismatches: readonly string[] };
}

export interface CheckReport {
  /** Attempts of every kind; logical writes (keys) and how they ended. */
  ops: number;
  writes: number;
  acked: number;
  failed: number;
  unknown: number;
  /** Write attempts beyond each key's first. */
  retried: number;
  reads: number;
  lost: string[];
  duplicated: string[];
  failedPresent: string[];
  staleReads: string[];
  diverged: string[];
  unexpected: string[];
  valid: boolean;
}

interface KeyState {
  key: string;
  value: string;
  attempts: number;
  /** Earliest ack's completion time, and every acked LSN. */
  ackedAt: number | null;
  lsns: Set<number>;
  failed: boolean;
}

/** Judges a history; every list in the report is empty when the run kept every promise. */
export function checkHistory(input: CheckInput): CheckReport {
  const invokes = new Map<number, Extract<HistoryEvent, { type: "invoke" }>>();
  const keys = new Map<string, KeyState>();
  const byValue = new Map<string, KeyState>();
  const reads: { op: number; at: number; values: string[]; seen: string[]; servedBy: string }[] =
    [];
  const report: CheckReport = {
    ops: 0,
    writes: 0,
    acked: 0,
    failed: 0,
    unknown: 0,
    retried: 0,
    reads: 0,
    lost: [],
    duplicated: [],
    failedPresent: [],
    staleReads: [],
    diverged: [],
    unexpected: [],
    valid: false,
  };
  for (const event of input.events) {
    if (event.type === "invoke") {
      invokes.set(event.op, event);
      report.ops++;
      if (event.f === "read") {
        report.reads++;
        continue;
      }
      let state = keys.get(event.key);
      if (state === undefined) {
        state = {
          key: event.key,
          value: event.value,
          attempts: 0,
          ackedAt: null,
          lsns: new Set(),
          failed: false,
        };
        keys.set(event.key, state);
        byValue.set(event.value, state);
      } else if (state.value !== event.value) {
        throw new Error(`key ${event.key} was used for two values; the history is malformed`);
      }
      state.attempts++;
      continue;
    }
    const invoke = invokes.get(event.op);
    if (invoke === undefined) throw new Error(`op ${event.op} completed without an invocation`);
    if (invoke.f === "read") {
      if (event.type === "ok") {
        reads.push({
          op: event.op,
          at: invoke.at,
          values: invoke.values,
          seen: event.seen ?? [],
          servedBy: event.servedBy ?? "?",
        });
      }
      continue;
    }
    const state = keys.get(invoke.key);
    if (state === undefined) continue;
    if (event.type === "ok") {
      if (state.ackedAt === null || event.at < state.ackedAt) state.ackedAt = event.at;
      if (event.lsn !== undefined) state.lsns.add(event.lsn);
    } else if (event.type === "fail") {
      state.failed = true;
    }
  }

  for (const state of keys.values()) {
    report.writes++;
    report.retried += state.attempts - 1;
    if (state.ackedAt !== null) report.acked++;
    else if (state.failed) report.failed++;
    else report.unknown++;
    if (state.lsns.size > 1) {
      report.duplicated.push(
        `${state.key}: acked at LSNs ${[...state.lsns].sort((a, b) => a - b).join(", ")}`,
      );
    }
    if (state.ackedAt !== null && state.failed) {
      report.failedPresent.push(`${state.key}: acked and also answered with a definite failure`);
    }
  }

  for (const node of input.nodes) {
    const counts = new Map<string, number>();
    for (const value of node.values) counts.set(value, (counts.get(value) ?? 0) + 1);
    for (const state of keys.values()) {
      const n = counts.get(state.value) ?? 0;
      if (state.ackedAt !== null && n === 0) report.lost.push(`${state.key} on ${node.node}`);
      if (n > 1) report.duplicated.push(`${state.key} present ${n} times on ${node.node}`);
      if (state.failed && state.ackedAt === null && n > 0) {
        report.failedPresent.push(`${state.key} on ${node.node}`);
      }
    }
    for (const value of counts.keys()) {
      if (!byValue.has(value)) report.unexpected.push(`${value} on ${node.node}`);
    }
  }

  for (const read of reads) {
    const seen = new Set(read.seen);
    for (const value of read.values) {
      const state = byValue.get(value);
      if (state?.ackedAt == null || state.ackedAt >= read.at || seen.has(value)) continue;
      report.staleReads.push(
        `read ${read.op} on ${read.servedBy} missed ${state.key}, acked ${read.at - state.ackedAt} ms before it began`,
      );
    }
    if (seen.size < read.seen.length) {
      report.duplicated.push(`read ${read.op} on ${read.servedBy} saw a value twice`);
    }
    for (const value of seen) {
      const state = byValue.get(value);
      if (state === undefined) report.unexpected.push(`${value} seen by read ${read.op}`);
      else if (state.failed && state.ackedAt === null) {
        report.failedPresent.push(`${state.key} seen by read ${read.op} on ${read.servedBy}`);
      }
    }
  }

  if (!input.verify.agree) {
    report.diverged.push(...input.verify.mismatches.map((m) => `verify: ${m}`));
    if (input.verify.mismatches.length === 0) report.diverged.push("verify: nodes disagree");
  }
  const [first, ...others] = input.nodes;
  if (first !== undefined) {
    const reference = [...first.values].sort().join("\n");
    for (const node of others) {
      if ([...node.values].sort().join("\n") !== reference) {
        report.diverged.push(`${node.node}: rows differ from ${first.node}'s`);
      }
    }
  }

  report.valid =
    report.lost.length === 0 &&
    report.duplicated.length === 0 &&
    report.failedPresent.length === 0 &&
    report.staleReads.length === 0 &&
    report.diverged.length === 0 &&
    report.unexpected.length === 0;
  return report;
}
