/**
 * From an adversarial review of the linearizability checker: it agrees with an
 * independent brute-force oracle on random small histories, and judges
 * Jepsen-shaped histories (unknown writes and compare-and-sets, refused ones,
 * duplicate values) both ways.
 */
import { describe, expect, it } from "vitest";
import { checkLinearizability } from "../core/linearizability";
import { operationsFromHistory, type RegisterHistoryEvent } from "../core/register-history";
import type { RegisterOperation, RegisterValue } from "../core/register-model";

// ---------------------------------------------------------------- the checker

/**
 * An oracle written without the checker's model trick ("an unknown cas applies
 * if it can"): every subset of the unknown writes and cas is tried as the ones
 * that took effect, each placed anywhere after its invocation; the others
 * never happened. Definite operations are all placed; real time is kept.
 */
function oracle(ops: readonly RegisterOperation[]): boolean {
  const must = ops.filter(
    (o) => o.outcome === "ok" || (o.outcome === "fail" && o.f === "cas" && o.error === undefined),
  );
  const maybe = ops.filter((o) => o.outcome === "info" && o.f !== "read");
  const end = (o: RegisterOperation) => o.complete ?? Number.POSITIVE_INFINITY;
  const apply = (state: RegisterValue, o: RegisterOperation): RegisterValue | undefined => {
    if (o.f === "read") return state === o.value ? state : undefined;
    if (o.f === "write") return o.value;
    const [expected, next] = o.value;
    if (o.outcome === "fail") return state !== expected ? state : undefined;
    // ok, or an unknown one that took effect: it found `expected`.
    return state === expected ? next : undefined;
  };
  for (let mask = 0; mask < 1 << maybe.length; mask++) {
    const set = [...must, ...maybe.filter((_, i) => mask & (1 << i))];
    const used = set.map(() => false);
    const place = (state: RegisterValue, n: number): boolean => {
      if (n === set.length) return true;
      for (let i = 0; i < set.length; i++) {
        const o = set[i] as RegisterOperation;
        if (used[i]) continue;
        if (set.some((x, j) => !used[j] && j !== i && end(x) < o.invoke)) continue;
        const next = apply(state, o);
        if (next === undefined) continue;
        used[i] = true;
        const done = place(next, n + 1);
        used[i] = false;
        if (done) return true;
      }
      return false;
    };
    if (place(null, 0)) return true;
  }
  return false;
}

function randomHistory(rng: () => number): RegisterOperation[] {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rng() * xs.length)] as T;
  const processes = 1 + Math.floor(rng() * 4);
  const count = 1 + Math.floor(rng() * 7);
  const vals: RegisterValue[] = [1, 2, 3];
  const open = new Map<number, Record<string, unknown>>();
  const out: RegisterOperation[] = [];
  let at = 0;
  let made = 0;
  while (made < count || open.size > 0) {
    const p = Math.floor(rng() * processes);
    const op = open.get(p);
    if (op !== undefined) {
      if (rng() < 0.4) continue;
      open.delete(p);
      const r = rng();
      const outcome = r < 0.65 ? "ok" : r < 0.82 ? "fail" : "info";
      op.outcome = outcome;
      op.complete = outcome === "info" ? null : at++;
      if (outcome === "info") op.error = "timeout";
      if (op.f === "read") op.value = outcome === "ok" ? pick([null, ...vals]) : null;
      if (outcome === "fail" && (op.f !== "cas" || rng() < 0.3)) op.error = "refused";
      out.push(op as unknown as RegisterOperation);
    } else if (made < count) {
      const f = pick(["read", "write", "cas"] as const);
      const call: Record<string, unknown> = { id: at, process: p, key: "k", f, invoke: at++ };
      if (f === "write") call.value = pick(vals);
      if (f === "cas") call.value = [pick([null, ...vals]), pick(vals)];
      open.set(p, call);
      made++;
    }
  }
  return out;
}

describe("held: the linearizability checker", () => {
  it("the checker agrees with an independent oracle on 4,000 random small histories (unknown writes and cas, observing and refused cas)", () => {
    // Tried: both directions of misjudgement, with unknown cas whose effect the
    // oracle either applies (only where it finds `expected`) or leaves out.
    let seed = 13;
    const rng = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    const seen = { true: 0, false: 0 };
    for (let i = 0; i < 4_000; i++) {
      const ops = randomHistory(rng);
      const want = oracle(ops);
      seen[String(want) as "true" | "false"]++;
      const got = checkLinearizability(ops, { explainSteps: 0 }).linearizable;
      expect(got, JSON.stringify(ops)).toBe(want);
    }
    expect(seen.true).toBeGreaterThan(200);
    expect(seen.false).toBeGreaterThan(200);
  });

  const ev = (
    index: number,
    type: RegisterHistoryEvent["type"],
    process: number,
    f: RegisterHistoryEvent["f"],
    value: RegisterHistoryEvent["value"],
    error?: string,
  ): RegisterHistoryEvent => ({
    index,
    type,
    process,
    f,
    key: "r",
    value,
    time: index * 1e6,
    ...(error === undefined ? {} : { error }),
  });
  const judge = (events: RegisterHistoryEvent[]) =>
    checkLinearizability(operationsFromHistory(events), { explainSteps: 0 }).linearizable;

  it("Jepsen-shaped histories: an unknown write seen once stays seen; a read of the initial value after an acknowledged write is stale", () => {
    // An unknown write (timeout) is seen by a read; a later read (after the first
    // returned) sees the initial value again: not linearizable.
    expect(
      judge([
        ev(0, "invoke", 0, "write", 1),
        ev(1, "info", 0, "write", 1, "timeout"),
        ev(2, "invoke", 1, "read", null),
        ev(3, "ok", 1, "read", 1),
        ev(4, "invoke", 1, "read", null),
        ev(5, "ok", 1, "read", null),
      ]),
    ).toBe(false);
    // The same unknown write, seen only by the later read: linearizable.
    expect(
      judge([
        ev(0, "invoke", 0, "write", 1),
        ev(1, "info", 0, "write", 1, "timeout"),
        ev(2, "invoke", 1, "read", null),
        ev(3, "ok", 1, "read", null),
        ev(4, "invoke", 1, "read", null),
        ev(5, "ok", 1, "read", 1),
      ]),
    ).toBe(true);
    // An acknowledged write, then a read of the initial value: stale.
    expect(
      judge([
        ev(0, "invoke", 0, "write", 1),
        ev(1, "ok", 0, "write", 1),
        ev(2, "invoke", 1, "read", null),
        ev(3, "ok", 1, "read", null),
      ]),
    ).toBe(false);
    // A refused write (fail with an error) seen by a read: it did happen after all.
    expect(
      judge([
        ev(0, "invoke", 0, "write", 7),
        ev(1, "fail", 0, "write", 7, "400 BAD_REQUEST"),
        ev(2, "invoke", 1, "read", null),
        ev(3, "ok", 1, "read", 7),
      ]),
    ).toBe(false);
  });

  it("Jepsen-shaped histories: cas semantics, an unknown cas applied once, duplicate values", () => {
    // An unknown cas 1 -> 2 seen (read 2), then a write 1 and a read 2 again with no
    // other writer: the cas cannot apply twice.
    expect(
      judge([
        ev(0, "invoke", 0, "write", 1),
        ev(1, "ok", 0, "write", 1),
        ev(2, "invoke", 1, "cas", [1, 2]),
        ev(3, "info", 1, "cas", [1, 2], "timeout"),
        ev(4, "invoke", 2, "read", null),
        ev(5, "ok", 2, "read", 2),
        ev(6, "invoke", 2, "write", 1),
        ev(7, "ok", 2, "write", 1),
        ev(8, "invoke", 2, "read", null),
        ev(9, "ok", 2, "read", 2),
      ]),
    ).toBe(false);
    // A cas that failed by finding another value, while the register held exactly
    // its expected value throughout: not linearizable.
    expect(
      judge([
        ev(0, "invoke", 0, "write", 5),
        ev(1, "ok", 0, "write", 5),
        ev(2, "invoke", 1, "cas", [5, 6]),
        ev(3, "fail", 1, "cas", [5, 6]),
        ev(4, "invoke", 0, "read", null),
        ev(5, "ok", 0, "read", 5),
      ]),
    ).toBe(false);
    // Duplicate values: two writes of 1, a write of 2 between them in real time,
    // reads 1, 2, 1: linearizable only because the second write of 1 overlaps.
    expect(
      judge([
        ev(0, "invoke", 0, "write", 1),
        ev(1, "ok", 0, "write", 1),
        ev(2, "invoke", 0, "write", 2),
        ev(3, "invoke", 1, "write", 1),
        ev(4, "ok", 0, "write", 2),
        ev(5, "invoke", 2, "read", null),
        ev(6, "ok", 2, "read", 2),
        ev(7, "ok", 1, "write", 1),
        ev(8, "invoke", 2, "read", null),
        ev(9, "ok", 2, "read", 1),
      ]),
    ).toBe(true);
    // The same, with the second write of 1 finished before the write of 2 began: a
    // read of 1 after the read of 2 is stale.
    expect(
      judge([
        ev(0, "invoke", 0, "write", 1),
        ev(1, "ok", 0, "write", 1),
        ev(2, "invoke", 1, "write", 1),
        ev(3, "ok", 1, "write", 1),
        ev(4, "invoke", 0, "write", 2),
        ev(5, "ok", 0, "write", 2),
        ev(6, "invoke", 2, "read", null),
        ev(7, "ok", 2, "read", 2),
        ev(8, "invoke", 2, "read", null),
        ev(9, "ok", 2, "read", 1),
      ]),
    ).toBe(false);
  });
});
