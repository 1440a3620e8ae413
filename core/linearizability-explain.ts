/**
 * Why a key is not linearizable, in a few operations a person can read. Pure.
 *
 * First the smallest failing prefix: linearizability is prefix-closed (cut a
 * linearizable history at any event, let the operations still running take
 * effect or not, and it stays linearizable), so a binary search over the
 * completions finds the first one after which no linearization exists. The
 * violation happened there; everything after it is noise.
 *
 * Then the prefix shrinks, delta-debugging style, by removals that keep the
 * proof: a witness that cannot be linearized must imply the history cannot.
 * Removing an observation (a read, a failed cas) only relaxes constraints, so
 * it is always sound. Removing a write, or a cas that applied, is sound when no
 * remaining operation refers to the value it wrote and no failed cas remains:
 * take a linearization of the larger set and drop it; the operations between it
 * and the next change now see the value before it, and only writes and unknown
 * operations (which may move to the end) could sit there without referring to
 * its value. A failed cas could, and would then find the value it expected.
 */
import {
  type RegisterOperation,
  describeCall,
  isObservation,
  referencedValue,
  searchRegister,
  writtenValue,
} from "./register-model";

export interface Violation {
  /** Operations that cannot be linearized together, in invocation order. */
  witness: RegisterOperation[];
  /** The smallest prefix of the key's history that cannot be linearized. */
  prefix: { operations: number; endedBy: RegisterOperation };
  /** False when the step budget ran out before the witness stopped shrinking. */
  minimal: boolean;
  steps: number;
}

/** Steps left for the whole explanation of one key. */
class Budget {
  constructor(
    public remaining: number,
    private readonly perCheck: number,
  ) {}

  /** True when `ops` were shown not linearizable; false when they were not shown so. */
  failing(ops: readonly RegisterOperation[]): boolean {
    const cap = Math.min(this.perCheck, this.remaining);
    const result = searchRegister(ops, cap);
    this.remaining -= result.steps;
    return result.outcome === "not-linearizable";
  }

  get exhausted(): boolean {
    return this.remaining <= 0;
  }
}

interface Point {
  at: number;
  isCall: boolean;
  op: RegisterOperation;
}

/** The history up to and including the return at `points[end]`, ops still running left open. */
function prefixUpTo(points: readonly Point[], end: number): RegisterOperation[] {
  const returned = new Set<RegisterOperation>();
  const invoked: RegisterOperation[] = [];
  for (let i = 0; i <= end; i++) {
    const point = points[i] as Point;
    if (point.isCall) invoked.push(point.op);
    else returned.add(point.op);
  }
  const prefix: RegisterOperation[] = [];
  for (const op of invoked) {
    if (returned.has(op) || op.complete === null) prefix.push(op);
    // Still running at the cut: what it observed is not known yet; what it wrote may land.
    else if (!isObservation(op)) prefix.push({ ...op, outcome: "info", complete: null });
  }
  return prefix;
}

function smallestFailingPrefix(
  ops: readonly RegisterOperation[],
  budget: Budget,
): { ops: RegisterOperation[]; endedBy: RegisterOperation } | null {
  const points: Point[] = [];
  for (const op of ops) {
    points.push({ at: op.invoke, isCall: true, op });
    if (op.complete !== null) points.push({ at: op.complete, isCall: false, op });
  }
  points.sort((a, b) => a.at - b.at || Number(!a.isCall) - Number(!b.isCall));
  const returns = points.flatMap((point, i) => (point.isCall ? [] : [i]));
  let found: { ops: RegisterOperation[]; endedBy: RegisterOperation } | null = null;
  let low = 0;
  let high = returns.length - 1;
  while (low <= high && !budget.exhausted) {
    const mid = (low + high) >> 1;
    const end = returns[mid] as number;
    const prefix = prefixUpTo(points, end);
    if (budget.failing(prefix)) {
      found = { ops: prefix, endedBy: (points[end] as Point).op };
      high = mid - 1;
    } else {
      low = mid + 1;
    }
  }
  return found;
}

/** Removes chunks of candidates, halving the chunk size, while the rest still fails. */
function shrink(
  start: RegisterOperation[],
  isCandidate: (op: RegisterOperation) => boolean,
  budget: Budget,
): RegisterOperation[] {
  let witness = start;
  let size = Math.ceil(witness.filter(isCandidate).length / 2);
  while (size >= 1) {
    for (let from = 0; !budget.exhausted; ) {
      const candidates = witness.filter(isCandidate);
      if (from >= candidates.length) break;
      const chunk = new Set(candidates.slice(from, from + size));
      const rest = witness.filter((op) => !chunk.has(op));
      if (removalKeepsProof(rest, chunk) && budget.failing(rest)) witness = rest;
      else from += size;
    }
    if (size === 1 || budget.exhausted) break;
    size = Math.ceil(size / 2);
  }
  return witness;
}

/**
 * Whether taking `chunk` out keeps the proof: if what is left cannot be
 * linearized, neither could the operations before. Observations may always go;
 * a write or an applied cas only when no failed cas is left and nothing left
 * refers to the value it wrote.
 */
export function removalKeepsProof(
  rest: readonly RegisterOperation[],
  chunk: Iterable<RegisterOperation>,
): boolean {
  const changes = [...chunk].filter((op) => !isObservation(op));
  if (changes.length === 0) return true;
  if (rest.some((op) => op.f === "cas" && op.outcome === "fail")) return false;
  const referenced = new Set(rest.map(referencedValue).filter((v) => v !== undefined));
  return changes.every((op) => {
    const written = writtenValue(op);
    return written === undefined || !referenced.has(written);
  });
}

/**
 * A small set of a key's operations that cannot be linearized together, found
 * within `budgetSteps` search steps (`perCheckSteps` at most per attempt).
 * `ops` are the key's constraining operations, already found not linearizable.
 */
export function explainViolation(
  ops: readonly RegisterOperation[],
  perCheckSteps: number,
  budgetSteps: number,
): Violation {
  const budget = new Budget(budgetSteps, perCheckSteps);
  const prefix = smallestFailingPrefix(ops, budget);
  let witness = prefix?.ops ?? [...ops];
  const changes = (op: RegisterOperation) => !isObservation(op);
  // Until nothing more goes: a write can go once the reads of its value have gone, and a
  // read may stop mattering once a write has gone.
  for (let size = Number.POSITIVE_INFINITY; witness.length < size && !budget.exhausted; ) {
    size = witness.length;
    witness = shrink(witness, isObservation, budget);
    witness = shrink(witness, changes, budget);
  }
  const last = ops.reduce((a, b) => ((b.complete ?? -1) > (a.complete ?? -1) ? b : a));
  // An operation still running at the cut was checked as unknown; shown as it really ended,
  // it constrains more, so the witness still cannot be linearized.
  const original = new Map(ops.map((op) => [op.id, op]));
  return {
    witness: witness.map((op) => original.get(op.id) ?? op).sort((a, b) => a.invoke - b.invoke),
    prefix: { operations: prefix?.ops.length ?? ops.length, endedBy: prefix?.endedBy ?? last },
    minimal: !budget.exhausted,
    steps: budgetSteps - budget.remaining,
  };
}

const ms = (value: number | undefined) => (value === undefined ? "" : ` (${value.toFixed(1)} ms)`);

/** One operation as a line: what it did, who, and when it began and ended. */
export function describeOperation(op: RegisterOperation): string {
  const ended =
    op.complete === null
      ? `never completed${op.error === undefined ? "" : ` (${op.error})`}`
      : `${op.outcome} at #${op.complete}${ms(op.completeMs)}`;
  const node = op.node === undefined ? "" : `, served by ${op.node}`;
  const reason = op.complete !== null && op.error !== undefined ? ` (${op.error})` : "";
  return `${describeCall(op).padEnd(20)} process ${op.process}: invoked #${op.invoke}${ms(op.invokeMs)}, ${ended}${reason}${node}`;
}

/** The explanation a failing key prints: the witness, then where the history first fails. */
export function describeViolation(key: string, operations: number, v: Violation): string {
  return [
    `key ${key}: not linearizable. These ${v.witness.length} of its ${operations} operations cannot be linearized together${v.minimal ? "" : " (the step budget ran out before the list stopped shrinking)"}:`,
    ...v.witness.map((op) => `  ${describeOperation(op)}`),
    "  (each must take effect between its invocation and its completion, an unknown one at any point after its invocation or never; no order does that and keeps a register's semantics)",
    `  The first failing prefix of the key's history has ${v.prefix.operations} operations and ends when "${describeCall(v.prefix.endedBy)}" of process ${v.prefix.endedBy.process} completed at #${v.prefix.endedBy.complete}.`,
  ].join("\n");
}
