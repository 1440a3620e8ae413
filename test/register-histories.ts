/**
 * Register histories for the checker's self-tests: a shorthand for writing
 * them by hand, a simulated linearizable register that generates them with
 * random concurrency, and a brute-force oracle that shares no code with the
 * checker.
 */
import fc from "fast-check";
import type { RegisterOperation, RegisterValue } from "../core/linearizability";
import type { Outcome } from "../core/register-model";

type Call =
  | { f: "read"; value: RegisterValue }
  | { f: "write"; value: RegisterValue }
  | { f: "cas"; value: readonly [RegisterValue, RegisterValue] };

/** [invoke, complete]; complete null for an unknown outcome. */
type Interval = readonly [number, number | null];

export type Spec = Call & { at: Interval; outcome?: Outcome; error?: string; key?: string };

export const read = (value: RegisterValue, at: Interval, outcome?: Outcome): Spec => ({
  f: "read",
  value,
  at,
  ...(outcome === undefined ? {} : { outcome }),
});
export const write = (value: RegisterValue, at: Interval, outcome?: Outcome): Spec => ({
  f: "write",
  value,
  at,
  ...(outcome === undefined ? {} : { outcome }),
});
export const cas = (
  expected: RegisterValue,
  next: RegisterValue,
  at: Interval,
  outcome?: Outcome,
): Spec => ({
  f: "cas",
  value: [expected, next],
  at,
  ...(outcome === undefined ? {} : { outcome }),
});

/** Operations with ids and processes by position; the outcome is info when complete is null. */
export function history(...specs: Spec[]): RegisterOperation[] {
  return specs.map((spec, i) => {
    const { at, outcome, error, key, ...call } = spec;
    return {
      ...call,
      id: i,
      process: i,
      key: key ?? "k",
      outcome: outcome ?? (at[1] === null ? "info" : "ok"),
      invoke: at[0],
      complete: at[1],
      ...(error === undefined ? {} : { error }),
    } as RegisterOperation;
  });
}

// ------------------------------------------------------------------ oracle

/**
 * Linearizable by brute force: every order of the operations that respects
 * real time, each unknown write or cas either placed somewhere after its
 * invocation or left out. Small histories only.
 */
export function bruteForceLinearizable(ops: readonly RegisterOperation[]): boolean {
  const kept = ops.filter(
    (op) =>
      op.outcome === "ok" ||
      (op.outcome === "info" && op.f !== "read") ||
      (op.outcome === "fail" && op.f === "cas" && op.error === undefined),
  );
  const ends = (op: RegisterOperation) => op.complete ?? Number.POSITIVE_INFINITY;
  const search = (left: readonly RegisterOperation[], state: RegisterValue): boolean => {
    if (left.every((op) => op.outcome === "info")) return true;
    for (const op of left) {
      // Some other operation ended before this one began: it must come first.
      if (left.some((other) => other !== op && ends(other) < op.invoke)) continue;
      const rest = left.filter((other) => other !== op);
      if (op.outcome === "info" && search(rest, state)) return true;
      let next: RegisterValue | undefined;
      if (op.f === "read") next = state === op.value ? state : undefined;
      else if (op.f === "write") next = op.value;
      else if (op.outcome === "ok") next = state === op.value[0] ? op.value[1] : undefined;
      else if (op.outcome === "fail") next = state !== op.value[0] ? state : undefined;
      else next = state === op.value[0] ? op.value[1] : undefined;
      if (next !== undefined && search(rest, next)) return true;
    }
    return false;
  };
  return search(kept, null);
}

/** Small random histories over few values, linearizable or not: for the oracle. */
export const arbitraryTinyHistory = fc
  .array(
    fc.record({
      f: fc.constantFrom("read", "write", "cas"),
      a: fc.constantFrom<RegisterValue>(null, 1, 2, 3),
      b: fc.constantFrom<RegisterValue>(1, 2, 3),
      outcome: fc.constantFrom<Outcome>("ok", "ok", "ok", "fail", "info"),
      refused: fc.boolean(),
    }),
    { minLength: 1, maxLength: 6 },
  )
  .chain((calls) =>
    fc
      .shuffledSubarray(
        Array.from({ length: calls.length * 2 }, (_, i) => i),
        { minLength: calls.length * 2, maxLength: calls.length * 2 },
      )
      .map((points) =>
        history(
          ...calls.map((c, i): Spec => {
            const [x, y] = [points[2 * i] as number, points[2 * i + 1] as number];
            const at: Interval = [Math.min(x, y), c.outcome === "info" ? null : Math.max(x, y)];
            const error = c.outcome === "fail" && c.refused ? "refused" : undefined;
            const base = { at, outcome: c.outcome, ...(error === undefined ? {} : { error }) };
            if (c.f === "cas") return { ...base, f: "cas", value: [c.a, c.b] };
            if (c.f === "write") return { ...base, f: "write", value: c.b };
            return { ...base, f: "read", value: c.a };
          }),
        ),
      ),
  );

// ------------------------------------------------------------------ simulation

const simulatedCall = fc.record({
  process: fc.nat({ max: 4 }),
  f: fc.constantFrom("read", "read", "write", "write", "cas"),
  gap: fc.nat({ max: 6 }),
  length: fc.integer({ min: 1, max: 20 }),
  /** Where inside its interval the operation takes effect. */
  effect: fc.double({ min: 0.01, max: 0.99, noNaN: true }),
  casHits: fc.boolean(),
  /** ok, refused (a definite failure, nothing happened), or unknown. */
  outcome: fc.constantFrom("ok", "ok", "ok", "ok", "refused", "info"),
  /** An unknown write or cas: whether it took effect at all, and how late. */
  landed: fc.boolean(),
  lateBy: fc.nat({ max: 60 }),
});

/**
 * A linearizable history of one register: each process runs its operations
 * one after another, each takes effect at a random instant inside its interval
 * (an unknown one possibly after its client gave up, or never), and every read
 * and cas result comes from applying them in the order of those instants.
 * Values written are unique. Ends with a read after everything has landed.
 */
export const arbitraryLinearizableHistory = fc
  .array(simulatedCall, { minLength: 1, maxLength: 60, size: "medium" })
  .map((calls) => {
    const clock = new Map<number, number>();
    const timed = calls.map((c, i) => {
      const start = (clock.get(c.process) ?? 0) + c.gap;
      const end = start + c.length;
      clock.set(c.process, end + 1);
      const span = c.outcome === "info" ? c.length + c.lateBy : c.length;
      const lands = c.outcome === "ok" || (c.outcome === "info" && c.landed);
      return { ...c, i, start, end, at: start + c.effect * span, lands };
    });
    let state: RegisterValue = null;
    let next = 1;
    const written: number[] = [];
    const specs: Spec[] = new Array(timed.length);
    for (const c of [...timed].sort((a, b) => a.at - b.at)) {
      const at: Interval = [c.start, c.outcome === "info" ? null : c.end];
      const outcome: Outcome = c.outcome === "refused" ? "fail" : (c.outcome as Outcome);
      const refused = c.outcome === "refused" ? { error: "refused" } : {};
      if (c.f === "read") {
        specs[c.i] = { f: "read", value: c.outcome === "ok" ? state : null, at, outcome };
        continue;
      }
      const value = next++;
      if (c.f === "write") {
        if (c.lands) state = value;
        specs[c.i] = { f: "write", value, at, outcome, ...refused };
        if (c.lands) written.push(value);
        continue;
      }
      // A miss expects the value before the current one, as a client a step behind would.
      const stale = written.findLast((v) => v !== state) ?? -1;
      const expected = c.casHits ? state : stale;
      const applies = c.lands && state === expected;
      // A cas that ran and missed is a definite failure without an error.
      const casOutcome = c.outcome === "ok" && !applies ? "fail" : outcome;
      if (applies) {
        state = value;
        written.push(value);
      }
      specs[c.i] = { f: "cas", value: [expected, value], at, outcome: casOutcome, ...refused };
    }
    const last = Math.max(...timed.map((c) => c.start + c.length + c.lateBy)) + 1;
    specs.push({ f: "read", value: state, at: [last, last + 1], outcome: "ok" });
    return history(...specs);
  });

/**
 * A value that no linearization lets `reader` return: one written by a
 * completed write or cas that another completed change followed, both before
 * the read began (values are unique, so nothing wrote it again).
 */
export function staleValueFor(
  ops: readonly RegisterOperation[],
  reader: RegisterOperation,
): RegisterValue | undefined {
  const changes = ops.filter(
    (op) => op.outcome === "ok" && op.f !== "read" && op.complete !== null,
  );
  const written = (op: RegisterOperation) => (op.f === "cas" ? op.value[1] : op.value);
  for (const old of changes) {
    const overwritten = changes.some(
      (later) =>
        later !== old &&
        (old.complete as number) < later.invoke &&
        (later.complete as number) < reader.invoke &&
        written(later) !== written(old),
    );
    if (overwritten) return written(old) as RegisterValue;
  }
  return undefined;
}
