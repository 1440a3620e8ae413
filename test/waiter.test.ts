import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { NodeView, Outcome, PassResult } from "../core/ack-book";
import { Waiter, type WaitPath, type WaitRequest } from "../durable-objects/master/waiter";

interface Answer {
  lsn: number;
  outcome: Outcome;
  path: WaitPath;
  waitedMs: number;
}

interface Harness {
  acked: Map<string, number>;
  coherent: Map<string, boolean>;
  lease: Map<string, number>;
  clock: { now: number };
  durable: { on: boolean };
  answers: Answer[];
  marked: Set<string>[];
  wakes: (number | null)[];
  passResults: PassResult<unknown>[];
  waiter: Waiter;
}

/**
 * A Waiter over a NodeView backed by maps (unknown nodes acked 0, are coherent
 * and hold no lease), a clock the test moves by hand, and hooks that record
 * every call.
 */
function harness(acked: Record<string, number> = {}, start = 0): Harness {
  const h: Omit<Harness, "waiter"> = {
    acked: new Map(Object.entries(acked)),
    coherent: new Map(),
    lease: new Map(),
    clock: { now: start },
    durable: { on: false },
    answers: [],
    marked: [],
    wakes: [],
    passResults: [],
  };
  const view: NodeView = {
    ackedLsn: (id) => h.acked.get(id) ?? 0,
    isCoherent: (id) => h.coherent.get(id) ?? true,
    leaseUntil: (id) => h.lease.get(id) ?? 0,
  };
  const waiter = new Waiter(view, {
    now: () => h.clock.now,
    durableLsns: () => h.durable.on,
    markIncoherent: (ids) => h.marked.push(new Set(ids)),
    wakeAt: (at) => h.wakes.push(at),
    answered: (lsn, outcome, path, waitedMs) => h.answers.push({ lsn, outcome, path, waitedMs }),
    passed: (result) => h.passResults.push(result),
  });
  return { ...h, waiter };
}

interface RequestOptions {
  sanctioned?: readonly string[];
  deadline?: number;
  giveUpAt?: number;
  quorum?: number;
  path?: WaitPath;
}

function request(
  lsn: number,
  waitOn: readonly string[],
  options: RequestOptions = {},
): WaitRequest {
  return {
    lsn,
    waitSet: new Set(waitOn),
    sanctioned: options.sanctioned ?? waitOn,
    deadline: options.deadline ?? 1000,
    giveUpAt: options.giveUpAt ?? 10_000,
    ...(options.quorum === undefined ? {} : { quorum: options.quorum }),
    path: options.path ?? "handoff",
  };
}

/** Lets queued microtasks (a requested pass, promise reactions) run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

/** Records a wait's outcome as soon as its promise resolves. */
function track(promise: Promise<Outcome>): { outcome: Outcome | undefined } {
  const box: { outcome: Outcome | undefined } = { outcome: undefined };
  void promise.then((outcome) => {
    box.outcome = outcome;
  });
  return box;
}

function answeredLsns(h: Harness): number[] {
  return h.answers.map((a) => a.lsn);
}

describe("Waiter answers", () => {
  it("resolves a wait with acked once every node of its wait set acked", async () => {
    const h = harness({ A: 0, B: 0 });
    const waiting = track(h.waiter.wait(request(10, ["A", "B"])));
    await settle();
    expect(waiting.outcome).toBeUndefined();

    h.acked.set("A", 10);
    h.waiter.requestPass();
    await settle();
    expect(waiting.outcome).toBeUndefined();
    expect(h.waiter.outstanding).toBe(1);

    h.acked.set("B", 12);
    h.waiter.requestPass();
    await settle();
    expect(waiting.outcome).toBe("acked");
    expect(h.waiter.outstanding).toBe(0);
    expect(h.waiter.oldestLsn()).toBeNull();
  });

  it("resolves a wait answered by a direct pass", async () => {
    const h = harness({ A: 0 });
    const promise = h.waiter.wait(request(7, ["A"]));
    h.acked.set("A", 7);
    h.waiter.pass();
    await expect(promise).resolves.toBe("acked");
  });

  it("answers at once a wait whose nodes already acked its LSN", async () => {
    const h = harness({ A: 20, B: 20 });
    const promise = h.waiter.wait(request(10, ["A", "B"]));
    expect(h.waiter.passes).toBe(1);
    expect(answeredLsns(h)).toEqual([10]);
    await expect(promise).resolves.toBe("acked");
  });

  it("resolves timeout once the give-up time passed", async () => {
    const h = harness({ A: 0 });
    h.lease.set("A", 1_000_000);
    const waiting = track(h.waiter.wait(request(10, ["A"], { deadline: 1000, giveUpAt: 3000 })));
    h.clock.now = 2999;
    h.waiter.pass();
    await settle();
    expect(waiting.outcome).toBeUndefined();

    h.clock.now = 3000;
    h.waiter.pass();
    await settle();
    expect(waiting.outcome).toBe("timeout");
    expect(h.answers).toEqual([{ lsn: 10, outcome: "timeout", path: "handoff", waitedMs: 3000 }]);
  });

  it("resolves not-durable at the deadline when durable_lsns is on and only a minority acked", async () => {
    const h = harness({ A: 10 });
    h.durable.on = true;
    // Only A was in the wait set; A and the master are two of five nodes.
    const sanctioned = ["A", "B", "C", "D"];
    const waiting = track(h.waiter.wait(request(10, ["A"], { sanctioned, deadline: 1000 })));
    await settle();
    expect(waiting.outcome).toBeUndefined();
    expect(h.wakes.at(-1)).toBe(1000);

    h.clock.now = 1000;
    h.waiter.pass();
    await settle();
    expect(waiting.outcome).toBe("not-durable");
  });

  it("resolves acked for the same acks when durable_lsns is off", async () => {
    const h = harness({ A: 10 });
    const sanctioned = ["A", "B", "C", "D"];
    const promise = h.waiter.wait(request(10, ["A"], { sanctioned, deadline: 1000 }));
    await expect(promise).resolves.toBe("acked");
  });

  it("resolves a quorum wait over four nodes once two of them acked", async () => {
    const h = harness({ A: 0, B: 0, C: 0, D: 0 });
    const waiting = track(h.waiter.wait(request(10, ["A", "B", "C", "D"], { quorum: 2 })));
    h.acked.set("A", 10);
    h.waiter.requestPass();
    await settle();
    expect(waiting.outcome).toBeUndefined();

    h.acked.set("C", 10);
    h.waiter.requestPass();
    await settle();
    expect(waiting.outcome).toBe("acked");
  });

  it("hands the answered hook the LSN, outcome, path and waited time from the clock", async () => {
    const h = harness({ A: 0 }, 100);
    const promise = h.waiter.wait(request(10, ["A"], { path: "inline" }));
    h.clock.now = 250;
    h.acked.set("A", 10);
    h.waiter.pass();
    await promise;
    expect(h.answers).toEqual([{ lsn: 10, outcome: "acked", path: "inline", waitedMs: 150 }]);
  });

  it("measures each wait from its own start", async () => {
    const h = harness({ A: 0 }, 0);
    const first = h.waiter.wait(request(10, ["A"], { path: "handoff" }));
    h.clock.now = 40;
    const second = h.waiter.wait(request(11, ["A"], { path: "replay" }));
    h.clock.now = 100;
    h.acked.set("A", 11);
    h.waiter.pass();
    await Promise.all([first, second]);
    expect(h.answers).toEqual([
      { lsn: 10, outcome: "acked", path: "handoff", waitedMs: 100 },
      { lsn: 11, outcome: "acked", path: "replay", waitedMs: 60 },
    ]);
  });
});

describe("Waiter passes", () => {
  it("runs exactly one pass for several pass requests in one turn", async () => {
    const h = harness({ A: 0 });
    void h.waiter.wait(request(10, ["A"]));
    expect(h.waiter.passes).toBe(1);

    h.waiter.requestPass();
    h.waiter.requestPass();
    h.waiter.requestPass();
    // The pass is queued, not run.
    expect(h.waiter.passes).toBe(1);
    await settle();
    expect(h.waiter.passes).toBe(2);
  });

  it("runs another pass for a request made in a later turn", async () => {
    const h = harness({ A: 0 });
    void h.waiter.wait(request(10, ["A"]));
    h.waiter.requestPass();
    await settle();
    h.waiter.requestPass();
    h.waiter.requestPass();
    await settle();
    expect(h.waiter.passes).toBe(3);
  });

  it("checks acks that arrived in one turn together in the requested pass", async () => {
    const h = harness({ A: 0, B: 0 });
    const first = track(h.waiter.wait(request(10, ["A"])));
    const second = track(h.waiter.wait(request(11, ["B"])));
    h.acked.set("A", 10);
    h.waiter.requestPass();
    h.acked.set("B", 11);
    h.waiter.requestPass();
    await settle();
    expect(first.outcome).toBe("acked");
    expect(second.outcome).toBe("acked");
    expect(h.waiter.passes).toBe(3);
    expect(h.passResults.at(-1)?.answered.map((a) => a.commit.lsn)).toEqual([10, 11]);
  });

  it("adds each pass's comparisons to the running count", () => {
    const h = harness({ A: 0, B: 0 });
    void h.waiter.wait(request(10, ["A", "B"]));
    expect(h.waiter.comparisons).toBe(2);
    h.acked.set("A", 10);
    h.waiter.pass();
    expect(h.waiter.comparisons).toBe(4);
    // A left the wait set when it acked: only B is compared now.
    h.waiter.pass();
    expect(h.waiter.comparisons).toBe(5);
  });

  it("calls the passed hook once per pass with the book's result", () => {
    const h = harness({ A: 0 });
    void h.waiter.wait(request(10, ["A"]));
    h.waiter.pass();
    expect(h.passResults).toHaveLength(2);
    expect(h.passResults[1]?.checked).toBe(1);
    expect(h.passResults[1]?.answered).toEqual([]);
  });

  it("gives the wakeAt hook null and runs no pass when nothing waits", async () => {
    const h = harness();
    h.waiter.pass();
    expect(h.wakes).toEqual([null]);
    h.waiter.requestPass();
    await settle();
    expect(h.wakes).toEqual([null, null]);
    expect(h.waiter.passes).toBe(0);
    expect(h.passResults).toEqual([]);
  });

  it("gives the wakeAt hook null once the last wait was answered", () => {
    const h = harness({ A: 0 });
    void h.waiter.wait(request(10, ["A"], { deadline: 800 }));
    expect(h.wakes).toEqual([800]);
    h.acked.set("A", 10);
    h.waiter.pass();
    expect(h.wakes).toEqual([800, null]);
  });

  it("gives the wakeAt hook the earliest deadline among the waits", () => {
    const h = harness({ A: 0, B: 0 });
    void h.waiter.wait(request(10, ["A"], { deadline: 900 }));
    void h.waiter.wait(request(11, ["B"], { deadline: 700 }));
    expect(h.wakes.at(-1)).toBe(700);
  });

  it("gives the markIncoherent hook the nodes behind a due deadline", () => {
    const h = harness({ A: 10, B: 3, C: 4 });
    h.lease.set("B", 5000);
    h.lease.set("C", 5000);
    void h.waiter.wait(request(10, ["A", "B", "C"], { deadline: 1000 }));
    expect(h.marked).toEqual([]);

    h.clock.now = 1000;
    h.waiter.pass();
    expect(h.marked).toEqual([new Set(["B", "C"])]);
    // Both still hold a lease: the commit waits for it to expire.
    expect(h.answers).toEqual([]);
    expect(h.wakes.at(-1)).toBe(5000);
  });

  it("does not call the markIncoherent hook when no deadline is due", () => {
    const h = harness({ A: 0 });
    void h.waiter.wait(request(10, ["A"], { deadline: 1000 }));
    h.clock.now = 999;
    h.waiter.pass();
    expect(h.marked).toEqual([]);
  });
});

describe("Waiter counters", () => {
  it("counts only handed-off waits in handedOffNow and lowers it as they are answered", async () => {
    const h = harness({ A: 0, B: 0, C: 0 });
    void h.waiter.wait(request(10, ["A"], { path: "handoff" }));
    void h.waiter.wait(request(11, ["B"], { path: "inline" }));
    void h.waiter.wait(request(12, ["C"], { path: "handoff" }));
    void h.waiter.wait(request(13, ["C"], { path: "replay" }));
    expect(h.waiter.handedOffNow).toBe(2);
    expect(h.waiter.outstanding).toBe(4);

    h.acked.set("B", 11);
    h.waiter.requestPass();
    await settle();
    expect(h.waiter.handedOffNow).toBe(2);

    h.acked.set("A", 10);
    h.waiter.requestPass();
    await settle();
    expect(h.waiter.handedOffNow).toBe(1);

    h.acked.set("C", 13);
    h.waiter.requestPass();
    await settle();
    expect(h.waiter.handedOffNow).toBe(0);
    expect(h.waiter.outstanding).toBe(0);
  });

  it("lowers handedOffNow for a handed-off wait that times out", () => {
    const h = harness({ A: 0 });
    void h.waiter.wait(request(10, ["A"], { giveUpAt: 500, path: "handoff" }));
    expect(h.waiter.handedOffNow).toBe(1);
    h.clock.now = 500;
    h.waiter.pass();
    expect(h.waiter.handedOffNow).toBe(0);
  });

  it("keeps the peak number of waits held at once", () => {
    const h = harness({ A: 0 });
    void h.waiter.wait(request(10, ["A"]));
    void h.waiter.wait(request(11, ["A"]));
    void h.waiter.wait(request(12, ["A"]));
    expect(h.waiter.peak).toBe(3);

    h.acked.set("A", 12);
    h.waiter.pass();
    expect(h.waiter.outstanding).toBe(0);
    expect(h.waiter.peak).toBe(3);

    void h.waiter.wait(request(13, ["A"]));
    void h.waiter.wait(request(14, ["A"]));
    expect(h.waiter.peak).toBe(3);
    void h.waiter.wait(request(15, ["A"]));
    void h.waiter.wait(request(16, ["A"]));
    expect(h.waiter.peak).toBe(4);
  });

  it("reports the oldest waiting LSN", () => {
    const h = harness({ A: 0 });
    void h.waiter.wait(request(20, ["A"]));
    void h.waiter.wait(request(15, ["A"], { path: "replay" }));
    expect(h.waiter.oldestLsn()).toBe(15);
  });
});

describe("Waiter joins", () => {
  it("holds a wait for a replica that joined until that replica acks", async () => {
    const h = harness({ A: 0, B: 20 });
    const held = track(h.waiter.wait(request(40, ["A"])));
    h.waiter.joinWaits("B", 20);
    h.acked.set("A", 40);
    h.waiter.pass();
    await settle();
    expect(held.outcome).toBeUndefined();

    h.acked.set("B", 40);
    h.waiter.pass();
    await settle();
    expect(held.outcome).toBe("acked");
  });
});

describe("Waiter early stop", () => {
  it("answers commit 35 waiting only on A while commit 30 waits on B, skipping commit 45", async () => {
    // The seed's scenario: B acked 20; A acks 35 after the waits began.
    const h = harness({ A: 0, B: 20 });
    const c30 = track(h.waiter.wait(request(30, ["B"], { deadline: 1000 })));
    const c35 = track(h.waiter.wait(request(35, ["A"], { deadline: 1010 })));
    const c45 = track(h.waiter.wait(request(45, ["A", "B"], { deadline: 1020 })));
    const passesBefore = h.waiter.passes;
    const skippedBefore = h.waiter.skippedEarlyStop;

    h.clock.now = 500;
    h.acked.set("A", 35);
    h.waiter.requestPass();
    await settle();

    expect(h.waiter.passes).toBe(passesBefore + 1);
    expect(c35.outcome).toBe("acked");
    expect(c30.outcome).toBeUndefined();
    expect(c45.outcome).toBeUndefined();
    expect(answeredLsns(h)).toEqual([35]);
    expect(h.waiter.outstanding).toBe(2);
    expect(h.waiter.oldestLsn()).toBe(30);
    // Commit 45 waits on B, already found behind commit 30, and is not re-checked.
    expect(h.waiter.skippedEarlyStop).toBe(skippedBefore + 1);
    const last = h.passResults.at(-1);
    expect(last?.checked).toBe(2);
    expect(last?.skippedEarlyStop).toBe(1);
    expect(h.marked).toEqual([]);
    expect(h.wakes.at(-1)).toBe(1000);
  });
});

describe("Waiter properties", () => {
  const NODES = ["A", "B", "C"] as const;

  type Event =
    | { kind: "ack"; node: number; step: number }
    | { kind: "advance"; ms: number }
    | { kind: "request" }
    | { kind: "pass" };

  const eventArb: fc.Arbitrary<Event> = fc.oneof(
    fc.record({
      kind: fc.constant("ack" as const),
      node: fc.integer({ min: 0, max: NODES.length - 1 }),
      step: fc.integer({ min: 0, max: 30 }),
    }),
    fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 800 }) }),
    fc.record({ kind: fc.constant("request" as const) }),
    fc.record({ kind: fc.constant("pass" as const) }),
  );

  const commitArb = fc.record({
    lsn: fc.integer({ min: 1, max: 30 }),
    waitOn: fc.subarray([...NODES]),
    deadline: fc.integer({ min: 0, max: 1500 }),
    extra: fc.integer({ min: 0, max: 1500 }),
    quorum: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
  });

  const scenarioArb = fc.record({
    commits: fc.uniqueArray(commitArb, { minLength: 1, maxLength: 8, selector: (c) => c.lsn }),
    events: fc.array(eventArb, { minLength: 10, maxLength: 40 }),
    durable: fc.boolean(),
    leases: fc.array(fc.integer({ min: 0, max: 3000 }), {
      minLength: NODES.length,
      maxLength: NODES.length,
    }),
  });

  type Scenario = typeof scenarioArb extends fc.Arbitrary<infer S> ? S : never;

  interface Run {
    answers: [number, Outcome][];
    resolved: Map<number, Outcome>;
    handedOffNow: number;
    outstanding: number;
  }

  async function run(scenario: Scenario, path: WaitPath): Promise<Run> {
    const h = harness();
    h.durable.on = scenario.durable;
    scenario.leases.forEach((until, i) => {
      const node = NODES[i];
      if (node !== undefined) h.lease.set(node, until);
    });
    const resolved = new Map<number, Outcome>();
    for (const c of scenario.commits) {
      const promise = h.waiter.wait(
        request(c.lsn, c.waitOn, {
          sanctioned: NODES,
          deadline: c.deadline,
          giveUpAt: c.deadline + c.extra,
          ...(c.quorum === undefined ? {} : { quorum: c.quorum }),
          path,
        }),
      );
      void promise.then((outcome) => resolved.set(c.lsn, outcome));
    }
    for (const event of scenario.events) {
      if (event.kind === "ack") {
        const node = NODES[event.node];
        if (node !== undefined) h.acked.set(node, (h.acked.get(node) ?? 0) + event.step);
      } else if (event.kind === "advance") {
        h.clock.now += event.ms;
      } else if (event.kind === "request") {
        h.waiter.requestPass();
        await settle();
      } else {
        h.waiter.pass();
      }
    }
    await settle();
    return {
      answers: h.answers.map((a) => [a.lsn, a.outcome]),
      resolved,
      handedOffNow: h.waiter.handedOffNow,
      outstanding: h.waiter.outstanding,
    };
  }

  it("answers the same commits with the same outcomes whether they were handed off or waited inline", async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        const handoff = await run(scenario, "handoff");
        const inline = await run(scenario, "inline");
        expect(inline.answers).toEqual(handoff.answers);
        expect([...inline.resolved].sort((a, b) => a[0] - b[0])).toEqual(
          [...handoff.resolved].sort((a, b) => a[0] - b[0]),
        );
        expect(inline.outstanding).toBe(handoff.outstanding);
        // Each promise resolved with the outcome the answered hook reported.
        expect(new Map(handoff.answers)).toEqual(handoff.resolved);
        expect(handoff.handedOffNow).toBe(handoff.outstanding);
        expect(inline.handedOffNow).toBe(0);
      }),
      { numRuns: 200 },
    );
  });

  // Timing and outcomes against a full pass at every commit: waiter-race.test.ts.
  it("checks a new commit without examining the commits already waiting", () => {
    const h = harness({ A: 0 });
    for (let lsn = 1; lsn <= 100; lsn++) void h.waiter.wait(request(lsn, ["A"]));
    const last = h.passResults.at(-1);
    expect(last?.checked).toBe(1);
    expect(last?.skippedEarlyStop).toBe(0);
    expect(h.waiter.checked).toBe(100);
    // One wake, at the first commit's deadline: later commits never push it back.
    expect(h.wakes).toEqual([1000]);
  });

  it("takes an overdue wake at the next commit, late timer or none", () => {
    const h = harness({ A: 0 });
    void h.waiter.wait(request(10, ["A"], { deadline: 1000, giveUpAt: 5000 }));
    h.clock.now = 1500;
    // The timer for 1000 has not fired: the next commit makes the pass it was for.
    void h.waiter.wait(request(11, ["A"], { deadline: 2500, giveUpAt: 6500 }));
    expect(h.marked).toEqual([new Set(["A"])]);
    expect(h.passResults.at(-1)?.checked).toBe(2);
  });
});
