/**
 * A linearizability checker for registers, one per key. Pure.
 *
 * Linearizability is P-compositional: a history is linearizable exactly when
 * each key's sub-history is, so each key is checked on its own (Porcupine's
 * partitioning), which keeps the exponential search small. Each key is a
 * register (core/register-model.ts) searched with Wing & Gong's algorithm and
 * Lowe's memo (core/wgl-search.ts). Operations that constrain nothing are
 * dropped first: reads that returned nothing, and writes that definitely did
 * not happen. Unknown writes and cas operations stay, free to take effect at
 * any point after their invocation, or never.
 *
 * The search is exponential in the worst case, so each key has a step cap;
 * past it the key's verdict is "unknown", never true. A key found not
 * linearizable comes with an explanation (core/linearizability-explain.ts):
 * a handful of its operations that cannot be linearized together.
 */
import { type Violation, describeViolation, explainViolation } from "./linearizability-explain";
import { type RegisterOperation, constrains, searchRegister } from "./register-model";

export type { RegisterOperation, RegisterValue } from "./register-model";

export type Verdict = true | false | "unknown";

export interface KeyResult {
  key: string;
  linearizable: Verdict;
  /** The key's operations in the history, and those left once the ones that constrain nothing are dropped. */
  operations: number;
  checked: number;
  /** Search steps the verdict took (the explanation's are not counted). */
  steps: number;
  /** For "unknown": why the search could not decide. */
  reason?: string;
  /** For false: the witness, and the lines a person reads. */
  violation?: Violation;
  explanation?: string;
}

export interface LinearizabilityReport {
  /** True when every key is; false when one is not; else "unknown". */
  linearizable: Verdict;
  operations: number;
  keys: KeyResult[];
}

export interface CheckOptions {
  /** Search steps per key before its verdict is "unknown" (default 1,000,000). */
  maxSteps?: number;
  /** Search steps per failing key for shrinking its explanation (default 4 × maxSteps; 0: none). */
  explainSteps?: number;
}

export const DEFAULT_MAX_STEPS = 1_000_000;

/** Checks one key's operations; `ops` must all have that key. */
export function checkKey(
  key: string,
  ops: readonly RegisterOperation[],
  options: CheckOptions = {},
): KeyResult {
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
  const explainSteps = options.explainSteps ?? 4 * maxSteps;
  const checked = ops.filter(constrains);
  const result = searchRegister(checked, maxSteps);
  const base = { key, operations: ops.length, checked: checked.length, steps: result.steps };
  if (result.outcome === "linearizable") return { ...base, linearizable: true };
  if (result.outcome === "gave-up") {
    return {
      ...base,
      linearizable: "unknown",
      reason: `the search gave up after ${result.steps} steps (the cap) with ${result.longest.length} of ${checked.length} operations linearized`,
    };
  }
  if (explainSteps <= 0) {
    return {
      ...base,
      linearizable: false,
      explanation: `key ${key}: not linearizable (no explanation asked for); the longest linearizable order found has ${result.longest.length} of ${checked.length} operations`,
    };
  }
  const violation = explainViolation(checked, maxSteps, explainSteps);
  return {
    ...base,
    linearizable: false,
    violation,
    explanation: describeViolation(key, ops.length, violation),
  };
}

function validate(ops: readonly RegisterOperation[]): void {
  const ids = new Set<number>();
  for (const op of ops) {
    if (ids.has(op.id)) throw new Error(`operation id ${op.id} appears twice`);
    ids.add(op.id);
    if (op.outcome === "info" ? op.complete !== null : op.complete === null) {
      throw new Error(`operation ${op.id}: only an unknown (info) outcome has no completion`);
    }
    if (op.complete !== null && !(op.complete > op.invoke)) {
      throw new Error(`operation ${op.id} completes at ${op.complete}, not after ${op.invoke}`);
    }
  }
}

/** Checks every key of a history; keys come back sorted. */
export function checkLinearizability(
  ops: readonly RegisterOperation[],
  options: CheckOptions = {},
): LinearizabilityReport {
  validate(ops);
  const byKey = new Map<string, RegisterOperation[]>();
  for (const op of ops) {
    const list = byKey.get(op.key);
    if (list === undefined) byKey.set(op.key, [op]);
    else list.push(op);
  }
  const keys = [...byKey.keys()].sort().map((key) => checkKey(key, byKey.get(key) ?? [], options));
  const linearizable: Verdict = keys.some((k) => k.linearizable === false)
    ? false
    : keys.every((k) => k.linearizable === true)
      ? true
      : "unknown";
  return { linearizable, operations: ops.length, keys };
}

const WORD = { true: "yes", false: "no", unknown: "unknown" } as const;

/** `yes`, `no` or `unknown`, as the chaos run prints a verdict. */
export function verdictWord(verdict: Verdict): string {
  return WORD[String(verdict) as keyof typeof WORD];
}

/** One line per key, then a summary line; failing keys' explanations follow their line. */
export function describeReport(report: LinearizabilityReport): string[] {
  const lines: string[] = [];
  for (const k of report.keys) {
    lines.push(
      `register ${k.key}: linearizable: ${verdictWord(k.linearizable)} (${k.operations} operations, ${k.checked} checked, ${k.steps} steps)${k.reason === undefined ? "" : `: ${k.reason}`}`,
    );
    if (k.explanation !== undefined) lines.push(k.explanation);
  }
  const count = (v: Verdict) => report.keys.filter((k) => k.linearizable === v).length;
  lines.push(
    `linearizability: ${verdictWord(report.linearizable)}; ${report.keys.length} keys, ${report.operations} register operations; yes ${count(true)}, no ${count(false)}, unknown ${count("unknown")}`,
  );
  return lines;
}
