import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type RegisterOperation,
  checkKey,
  checkLinearizability,
  describeReport,
} from "../core/linearizability";
import { describeOperation, removalKeepsProof } from "../core/linearizability-explain";
import { constrains, isObservation, searchRegister } from "../core/register-model";
import {
  arbitraryLinearizableHistory,
  arbitraryTinyHistory,
  bruteForceLinearizable,
  cas,
  history,
  read,
  staleValueFor,
  write,
} from "./register-histories";

const verdict = (ops: RegisterOperation[]) => checkKey("k", ops).linearizable;

/** An order from the search is a linearization: real time kept, every result explained. */
function expectValidOrder(ops: readonly RegisterOperation[], order: readonly number[]): void {
  const placed = order.map((i) => ops[i] as RegisterOperation);
  for (let i = 0; i < placed.length; i++) {
    for (let j = i + 1; j < placed.length; j++) {
      const [a, b] = [placed[i] as RegisterOperation, placed[j] as RegisterOperation];
      expect(b.complete !== null && b.complete < a.invoke, `${b.id} ended before ${a.id}`).toBe(
        false,
      );
    }
  }
  let state: RegisterOperation["value"] = null;
  for (const op of placed) {
    if (op.f === "read") expect(op.value, `read ${op.id}`).toBe(state);
    else if (op.f === "write") state = op.value;
    else if (op.outcome === "ok") {
      expect(state, `cas ${op.id}`).toBe(op.value[0]);
      state = op.value[1];
    } else if (op.outcome === "fail") expect(state, `cas ${op.id}`).not.toBe(op.value[0]);
    else if (state === op.value[0]) state = op.value[1];
  }
  // Every operation that must have happened is in the order.
  const required = ops.filter((op) => op.outcome !== "info");
  expect(required.every((op) => placed.includes(op))).toBe(true);
}

describe("linearizable histories", () => {
  it("a sequential history, with a read of null before the first write", () => {
    expect(
      verdict(
        history(
          read(null, [0, 1]),
          write(1, [2, 3]),
          read(1, [4, 5]),
          write(2, [6, 7]),
          read(2, [8, 9]),
        ),
      ),
    ).toBe(true);
  });

  it("concurrent writes may land in either order, so reads during them may see either, even back and forth", () => {
    expect(
      verdict(history(write(1, [0, 10]), write(2, [0, 10]), read(2, [1, 2]), read(1, [3, 4]))),
    ).toBe(true);
    // A read overlapping a write may see the old value, and the next one the new.
    expect(
      verdict(
        history(
          write(1, [0, 1]),
          write(2, [2, 10]),
          read(1, [3, 4]),
          read(2, [5, 6]),
          read(2, [7, 8]),
        ),
      ),
    ).toBe(true);
  });

  it("a chain of compare-and-sets, a missed one, and two racing on one value", () => {
    expect(
      verdict(
        history(
          write(1, [0, 1]),
          cas(1, 2, [2, 3]),
          cas(2, 3, [4, 5]),
          cas(1, 4, [6, 7], "fail"),
          cas(3, 5, [8, 12]),
          cas(3, 6, [8, 12], "fail"),
          read(5, [13, 14]),
        ),
      ),
    ).toBe(true);
  });

  it("an unknown write may take effect long after its client gave up, or never", () => {
    const late = history(
      write(1, [0, 1]),
      write(2, [2, null]),
      read(1, [3, 4]),
      read(2, [10, 11]),
      read(2, [12, 13]),
    );
    expect(verdict(late)).toBe(true);
    const never = history(
      write(1, [0, 1]),
      write(2, [2, null]),
      read(1, [3, 4]),
      read(1, [10, 11]),
    );
    expect(verdict(never)).toBe(true);
    expect(
      verdict(history(write(1, [0, 1]), cas(1, 5, [2, null]), read(1, [3, 4]), read(5, [20, 21]))),
    ).toBe(true);
  });

  it("drops what constrains nothing: failed writes, failed and unknown reads, refused cas", () => {
    const ops = history(
      write(1, [0, 1]),
      write(2, [2, 3], "fail"),
      read(7, [4, 5], "info"),
      read(null, [4, 5], "fail"),
      { ...cas(2, 3, [6, 7], "fail"), error: "refused" },
      read(1, [8, 9]),
    );
    expect(ops.filter(constrains).map((op) => op.id)).toEqual([0, 5]);
    expect(checkKey("k", ops)).toMatchObject({ linearizable: true, operations: 6, checked: 2 });
  });

  it("the search's order is a real linearization", () => {
    const ops = history(write(1, [0, 10]), write(2, [0, 10]), read(2, [1, 2]), read(1, [3, 4]));
    const result = searchRegister(ops, 1000);
    expect(result.outcome).toBe("linearizable");
    if (result.outcome === "linearizable") expectValidOrder(ops, result.order);
  });
});

describe("histories that are not linearizable", () => {
  it("a stale read after a completed write", () => {
    expect(verdict(history(write(1, [0, 1]), write(2, [2, 3]), read(1, [4, 5])))).toBe(false);
    expect(verdict(history(write(1, [0, 1]), read(null, [2, 3])))).toBe(false);
  });

  it("two reads in the wrong order: r1 sees the new value, a later r2 the old one", () => {
    expect(
      verdict(history(write(1, [0, 1]), write(2, [2, 10]), read(2, [3, 4]), read(1, [5, 6]))),
    ).toBe(false);
  });

  it("a cas that succeeded against a value no one wrote, and one that failed against the value there", () => {
    expect(verdict(history(write(1, [0, 1]), cas(7, 8, [2, 3])))).toBe(false);
    expect(verdict(history(write(1, [0, 1]), cas(1, 2, [2, 3], "fail")))).toBe(false);
    // Refused with an error, it observed nothing.
    expect(verdict(history(write(1, [0, 1]), { ...cas(1, 2, [2, 3], "fail"), error: "x" }))).toBe(
      true,
    );
  });

  it("a read of a value never written, or written by a write that definitely failed", () => {
    expect(verdict(history(write(1, [0, 1]), read(9, [2, 3])))).toBe(false);
    expect(verdict(history(write(1, [0, 1]), write(2, [2, 3], "fail"), read(2, [4, 5])))).toBe(
      false,
    );
  });

  it("keys are judged apart: one bad key fails the report, the good one passes", () => {
    const ops = history(
      { ...write(1, [0, 1]), key: "a" },
      { ...read(1, [2, 3]), key: "a" },
      { ...write(1, [0, 1]), key: "b" },
      { ...read(null, [2, 3]), key: "b" },
    );
    const report = checkLinearizability(ops);
    expect(report.linearizable).toBe(false);
    expect(report.keys.map((k) => [k.key, k.linearizable, k.operations])).toEqual([
      ["a", true, 2],
      ["b", false, 2],
    ]);
    const lines = describeReport(report);
    expect(lines[0]).toMatch(/^register a: linearizable: yes \(2 operations/);
    expect(lines.some((l) => l.startsWith("register b: linearizable: no"))).toBe(true);
    expect(lines.at(-1)).toMatch(
      /^linearizability: no; 2 keys, 4 register operations; yes 1, no 1/,
    );
  });
});

describe("explanations", () => {
  it("name the few operations of a long history that cannot be linearized, with their times", () => {
    // 60 sequential write-read pairs, then a write and a stale read of the value before it.
    const specs = [];
    for (let i = 0; i < 60; i++) {
      specs.push(write(i, [4 * i, 4 * i + 1]), read(i, [4 * i + 2, 4 * i + 3]));
    }
    specs.push(write(100, [300, 301]), read(59, [302, 303]), write(101, [304, 305]));
    const result = checkKey("k", history(...specs));
    expect(result.linearizable).toBe(false);
    const witness = result.violation?.witness ?? [];
    expect(witness.map(describeOperation)).toEqual([
      "write 59             process 118: invoked #236, ok at #237",
      "write 100            process 120: invoked #300, ok at #301",
      "read -> 59           process 121: invoked #302, ok at #303",
    ]);
    expect(result.violation?.minimal).toBe(true);
    expect(result.violation?.prefix.operations).toBe(122);
    expect(result.explanation).toContain("key k: not linearizable. These 3 of its 123 operations");
    expect(result.explanation).toContain('ends when "read -> 59" of process 121 completed at #303');
  });

  it("shrink until nothing more goes: a write may go once the cas that expected its value has", () => {
    const ops = history(
      write(1, [0, 1]),
      write(5, [2, 10]),
      cas(1, 2, [3, 4]),
      write(6, [11, 12]),
      read(5, [13, 14]),
    );
    const witness = checkKey("k", ops).violation?.witness ?? [];
    expect(witness.map((op) => op.id)).toEqual([1, 3, 4]);
  });

  it("keep two reads in the wrong order with both writes they saw, and times when known", () => {
    const ops = history(write(1, [0, 1]), write(2, [2, 10]), read(2, [3, 4]), read(1, [5, 6])).map(
      (op) => ({ ...op, invokeMs: op.invoke * 1.5, completeMs: (op.complete ?? 0) * 1.5 }),
    );
    const witness = checkKey("k", ops).violation?.witness ?? [];
    expect(witness.map((op) => op.id)).toEqual([0, 1, 2, 3]);
    expect(describeOperation(witness[2] as RegisterOperation)).toBe(
      "read -> 2            process 2: invoked #3 (4.5 ms), ok at #4 (6.0 ms)",
    );
  });

  it("show an unknown operation as never completed, with its error", () => {
    const ops = history(write(1, [0, 1]), { ...write(2, [2, null]), error: "503" });
    expect(describeOperation(ops[1] as RegisterOperation)).toBe(
      "write 2              process 1: invoked #2, never completed (503)",
    );
  });
});

describe("shrinking an explanation", () => {
  it("keeps a write whose removal would make a failed cas see the value it expected", () => {
    // Linearizable: the cas failed because 2 had replaced 1. Without write 2 it could not fail.
    const ops = history(write(1, [0, 1]), write(2, [2, 3]), cas(1, 3, [4, 5], "fail"));
    const [w1, w2, missed] = ops as [RegisterOperation, RegisterOperation, RegisterOperation];
    expect(verdict(ops)).toBe(true);
    expect(verdict([w1, missed])).toBe(false);
    expect(removalKeepsProof([w1, missed], [w2])).toBe(false);
    expect(removalKeepsProof([w1, w2], [missed])).toBe(true);
  });

  it("keeps a write whose value a read or a cas refers to, and lets the others go", () => {
    const ops = history(write(1, [0, 1]), write(2, [2, 3]), read(2, [4, 5]), cas(2, 4, [6, 7]));
    const [w1, w2, r, c] = ops as [RegisterOperation, ...RegisterOperation[]];
    expect(removalKeepsProof([w1, c] as RegisterOperation[], [w2, r] as RegisterOperation[])).toBe(
      false,
    );
    expect(removalKeepsProof([w2, r, c] as RegisterOperation[], [w1])).toBe(true);
  });
});

describe("the step cap", () => {
  const sequential = history(
    ...Array.from({ length: 100 }, (_, i) => write(i, [2 * i, 2 * i + 1])),
    read(99, [300, 301]),
  );

  it("yields unknown, never true, for a linearizable history it cannot finish", () => {
    expect(checkKey("k", sequential).linearizable).toBe(true);
    const capped = checkKey("k", sequential, { maxSteps: 50 });
    expect(capped.linearizable).toBe("unknown");
    expect(capped.reason).toMatch(/gave up after 50 steps \(the cap\)/);
    expect(checkLinearizability(sequential, { maxSteps: 50 }).linearizable).toBe("unknown");
  });

  it("yields unknown, not false, for a violation it cannot finish proving", () => {
    const stale = [
      ...sequential,
      ...history(read(3, [400, 401])).map((op) => ({ ...op, id: 999 })),
    ];
    expect(checkKey("k", stale).linearizable).toBe(false);
    expect(checkKey("k", stale, { maxSteps: 50 }).linearizable).toBe("unknown");
  });

  it("is rarely reached thanks to the memo: 14 racing writes have 14! orders, not 14! steps", () => {
    const racing = history(
      ...Array.from({ length: 14 }, (_, i) => write(i, [0, 100])),
      read(99, [101, 102]),
    );
    const result = searchRegister(racing, 10_000_000);
    expect(result.outcome).toBe("not-linearizable");
    // At most 2^14 sets of linearized writes times 15 states, each tried on at most 15 entries.
    expect(result.steps).toBeLessThan(2 ** 14 * 15 * 15);
  });
});

describe("properties", () => {
  it("agrees with brute force on small random histories, and a failing key's witness fails too", () => {
    const seen = { true: 0, false: 0 };
    fc.assert(
      fc.property(arbitraryTinyHistory, (ops) => {
        const expected = bruteForceLinearizable(ops);
        const result = checkKey("k", ops);
        expect(result.linearizable).toBe(expected);
        seen[String(expected) as "true" | "false"]++;
        if (!expected) {
          const witness = result.violation?.witness ?? [];
          expect(witness.length).toBeGreaterThan(0);
          expect(witness.every((op) => ops.includes(op))).toBe(true);
          expect(bruteForceLinearizable(witness)).toBe(false);
        }
      }),
      { numRuns: 600 },
    );
    expect(seen.true).toBeGreaterThan(50);
    expect(seen.false).toBeGreaterThan(50);
  });

  it("passes every history of a simulated linearizable register, with a valid order", () => {
    fc.assert(
      fc.property(arbitraryLinearizableHistory, (ops) => {
        const checked = ops.filter(constrains);
        const result = searchRegister(checked, 1_000_000);
        expect(result.outcome).toBe("linearizable");
        if (result.outcome === "linearizable") expectValidOrder(checked, result.order);
      }),
      { numRuns: 300 },
    );
  });

  it("an explanation shrinks only by removals that keep a linearizable history linearizable", () => {
    let changesRemoved = 0;
    fc.assert(
      fc.property(arbitraryLinearizableHistory, fc.infiniteStream(fc.boolean()), (ops, coins) => {
        const checked = ops.filter(constrains);
        // Sometimes every failed cas goes first: the case where writes may go too.
        const start = coins.next().value
          ? checked.filter((op) => op.f === "read" || op.outcome !== "fail")
          : checked;
        const chunk = new Set(start.filter(() => coins.next().value));
        const rest = start.filter((op) => !chunk.has(op));
        if (!removalKeepsProof(rest, chunk)) return;
        if ([...chunk].some((op) => !isObservation(op))) changesRemoved++;
        expect(searchRegister(rest, 1_000_000).outcome).toBe("linearizable");
      }),
      // Seeded: how many runs remove a change depends on the generated histories
      // (an unseeded run once saw 27 of 300); asserted so the case is exercised.
      { numRuns: 300, seed: 20261201 },
    );
    expect(changesRemoved).toBeGreaterThan(15);
  });

  it("fails the same histories once one read returns a value that makes them impossible", () => {
    let stale = 0;
    fc.assert(
      fc.property(arbitraryLinearizableHistory, fc.nat(), (ops, pick) => {
        const reads = ops.filter((op) => op.f === "read" && op.outcome === "ok");
        // Rather a read that can be made stale: a value overwritten before it began.
        const staleable = reads.filter((op) => staleValueFor(ops, op) !== undefined);
        const choices = staleable.length > 0 ? staleable : reads;
        const reader = choices[pick % choices.length] as RegisterOperation;
        const old = staleValueFor(ops, reader);
        if (old !== undefined) stale++;
        // Else a value no one ever wrote.
        const value = old ?? -1;
        const mutated = ops.map((op) =>
          op === reader ? ({ ...op, value } as RegisterOperation) : op,
        );
        const result = checkKey("k", mutated);
        expect(result.linearizable).toBe(false);
        const witness = result.violation?.witness ?? [];
        expect(witness.some((op) => op.id === reader.id)).toBe(true);
        expect(searchRegister(witness, 1_000_000).outcome).toBe("not-linearizable");
      }),
      { numRuns: 300 },
    );
    // Most runs replaced the read with a stale value, the harder case.
    expect(stale).toBeGreaterThan(150);
  });
});
