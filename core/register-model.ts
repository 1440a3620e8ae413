/**
 * The register the linearizability checker judges each key against, and which
 * operations of a history constrain it. Pure.
 *
 * A key holds one value, or none yet (null). A read returns it; a write sets
 * it; a compare-and-set sets it to `new` if it holds `expected`. Outcomes are
 * Jepsen's: `ok` (it happened, with this result), `fail` (it did not happen)
 * and `info` (unknown: it may have taken effect at any point after it was
 * invoked, or never). A cas that failed without an `error` is the exception to
 * "did not happen": it ran and found another value, which is an observation.
 */
import { type SearchOperation, type SearchResult, searchLinearization } from "./wgl-search";

export type RegisterValue = number | string | null;
export type Outcome = "ok" | "fail" | "info";

interface OperationFields {
  /** Names the operation in the history: its invocation's index. */
  id: number;
  process: number;
  key: string;
  outcome: Outcome;
  /** Positions in the history's real-time order (Jepsen's `index`). */
  invoke: number;
  /** Null when the operation never completed (`info`). */
  complete: number | null;
  /** Wall-clock times in milliseconds since the history began, for explanations only. */
  invokeMs?: number;
  completeMs?: number;
  /** Why it failed or is unknown; a cas `fail` without one means the value differed. */
  error?: string;
  /** The node that served a read. */
  node?: string;
}

export type RegisterOperation = OperationFields &
  (
    | { f: "read"; value: RegisterValue }
    | { f: "write"; value: RegisterValue }
    | { f: "cas"; value: readonly [expected: RegisterValue, next: RegisterValue] }
  );

/**
 * Whether an operation constrains the register. Reads count only when they
 * returned a value; a failed write, and a cas refused with an error, did
 * nothing; an unknown write or cas may have done something, so it stays, with
 * no end to when it may take effect.
 */
export function constrains(op: RegisterOperation): boolean {
  if (op.outcome === "ok") return true;
  if (op.f === "read") return false;
  if (op.outcome === "info") return true;
  return op.f === "cas" && op.error === undefined;
}

/** An operation that observes the register without changing it. */
export function isObservation(op: RegisterOperation): boolean {
  return op.f === "read" || (op.f === "cas" && op.outcome === "fail");
}

/** The value a write or cas puts in the register when it takes effect. */
export function writtenValue(op: RegisterOperation): RegisterValue | undefined {
  if (op.f === "write") return op.value;
  if (op.f === "cas") return op.value[1];
  return undefined;
}

/** The value an operation saw or relied on: a read's result, a cas's expected value. */
export function referencedValue(op: RegisterOperation): RegisterValue | undefined {
  if (op.f === "read") return op.value;
  if (op.f === "cas") return op.value[0];
  return undefined;
}

type Searchable = SearchOperation & { op: RegisterOperation };

function step(state: RegisterValue, { op }: Searchable): RegisterValue | undefined {
  if (op.f === "read") return state === op.value ? state : undefined;
  if (op.f === "write") return op.value;
  const [expected, next] = op.value;
  if (op.outcome === "ok") return state === expected ? next : undefined;
  if (op.outcome === "fail") return state !== expected ? state : undefined;
  // Unknown: applied if it could. Not applying is the same as taking effect last.
  return state === expected ? next : state;
}

const registerModel = {
  init: null as RegisterValue,
  step,
  // The type prefix keeps the number 1 apart from the string "1".
  stateKey: (state: RegisterValue) => `${typeof state}:${String(state)}`,
};

/** Searches one key's constraining operations (see `constrains`) for a linearization. */
export function searchRegister(ops: readonly RegisterOperation[], maxSteps: number): SearchResult {
  const searchable = ops.map((op) => ({
    op,
    invoke: op.invoke,
    complete: op.complete ?? Number.POSITIVE_INFINITY,
  }));
  return searchLinearization(searchable, registerModel, maxSteps);
}

const show = (value: RegisterValue) => JSON.stringify(value);

/** `write 7`, `read -> 7`, `cas 7 -> 9`, as a line of an explanation shows it. */
export function describeCall(op: RegisterOperation): string {
  if (op.f === "read") return op.outcome === "ok" ? `read -> ${show(op.value)}` : "read";
  if (op.f === "write") return `write ${show(op.value)}`;
  return `cas ${show(op.value[0])} -> ${show(op.value[1])}`;
}
