import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AckBook,
  isDurable,
  type NodeView,
  type Outcome,
  type PassResult,
  type WaitingCommit,
} from "../core/ack-book";

interface FakeCluster {
  acked: Map<string, number>;
  coherent: Map<string, boolean>;
  lease: Map<string, number>;
  view: NodeView;
}

/** A NodeView over plain maps: unknown nodes acked 0, are coherent, and hold no lease. */
function fakeCluster(acked: Record<string, number> = {}): FakeCluster {
  const cluster: Omit<FakeCluster, "view"> = {
    acked: new Map(Object.entries(acked)),
    coherent: new Map(),
    lease: new Map(),
  };
  return {
    ...cluster,
    view: {
      ackedLsn: (id) => cluster.acked.get(id) ?? 0,
      isCoherent: (id) => cluster.coherent.get(id) ?? true,
      leaseUntil: (id) => cluster.lease.get(id) ?? 0,
    },
  };
}

interface CommitOptions {
  sanctioned?: readonly string[];
  deadline?: number;
  giveUpAt?: number;
}

function commit(
  lsn: number,
  waitOn: readonly string[],
  options: CommitOptions = {},
): WaitingCommit<string> {
  return {
    lsn,
    waitSet: new Set(waitOn),
    sanctioned: options.sanctioned ?? waitOn,
    deadline: options.deadline ?? 1000,
    giveUpAt: options.giveUpAt ?? 10_000,
    token: `commit-${lsn}`,
  };
}

function outcomes(result: PassResult<string>): [number, Outcome][] {
  return result.answered.map(({ commit, outcome }) => [commit.lsn, outcome]);
}

function bookWith(...commits: WaitingCommit<string>[]): AckBook<string> {
  const book = new AckBook<string>();
  for (const c of commits) book.add(c);
  return book;
}

describe("isDurable", () => {
  it("counts the master alone as a majority when no replica is sanctioned", () => {
    const { view } = fakeCluster();
    expect(isDurable(10, [], view)).toBe(true);
  });

  it("needs one replica ack out of two sanctioned replicas (two of three nodes)", () => {
    expect(isDurable(10, ["A", "B"], fakeCluster({ A: 10 }).view)).toBe(true);
    expect(isDurable(10, ["A", "B"], fakeCluster({ A: 9, B: 9 }).view)).toBe(false);
  });

  it("needs two replica acks out of four sanctioned replicas (three of five nodes)", () => {
    const sanctioned = ["A", "B", "C", "D"];
    expect(isDurable(10, sanctioned, fakeCluster({ A: 10 }).view)).toBe(false);
    expect(isDurable(10, sanctioned, fakeCluster({ A: 10, B: 12 }).view)).toBe(true);
  });

  it("does not treat half of an even-sized cluster as a majority", () => {
    // Three sanctioned replicas plus the master: two of four is not a majority.
    const sanctioned = ["A", "B", "C"];
    expect(isDurable(10, sanctioned, fakeCluster({ A: 10 }).view)).toBe(false);
    expect(isDurable(10, sanctioned, fakeCluster({ A: 10, B: 10 }).view)).toBe(true);
  });

  it("counts an ack past the LSN because an ack covers every earlier LSN", () => {
    expect(isDurable(10, ["A", "B"], fakeCluster({ A: 500 }).view)).toBe(true);
  });

  it("ignores acks from nodes that are not sanctioned", () => {
    expect(isDurable(10, ["A", "B"], fakeCluster({ C: 10, D: 10 }).view)).toBe(false);
  });
});

describe("AckBook bookkeeping", () => {
  it("keeps commits in LSN order even when an older LSN is added later", () => {
    const book = bookWith(commit(20, ["A"]), commit(30, ["A"]), commit(10, ["A"]));
    expect(book.size).toBe(3);
    expect(book.oldestLsn()).toBe(10);
    const { answered } = book.pass(fakeCluster({ A: 100 }).view, {
      now: 0,
      durableLsns: false,
    });
    expect(answered.map((a) => a.commit.lsn)).toEqual([10, 20, 30]);
  });

  it("reports no oldest LSN and no wake-up when nothing waits", () => {
    const book = new AckBook<string>();
    expect(book.size).toBe(0);
    expect(book.oldestLsn()).toBeNull();
    const result = book.pass(fakeCluster().view, { now: 0, durableLsns: false });
    expect(result.answered).toEqual([]);
    expect(result.wakeAt).toBeNull();
    expect(result.checked).toBe(0);
  });

  it("drains every waiting commit and leaves the book empty", () => {
    const book = bookWith(commit(2, ["A"]), commit(1, ["B"]));
    const drained = book.drain();
    expect(drained.map((c) => c.token)).toEqual(["commit-1", "commit-2"]);
    expect(book.size).toBe(0);
    expect(book.oldestLsn()).toBeNull();
  });

  it("joins a node to every waiting commit with an LSN past its acked LSN", () => {
    const c10 = commit(10, ["A"]);
    const c20 = commit(20, ["A"]);
    const c30 = commit(30, ["A"]);
    const book = bookWith(c10, c20, c30);
    book.joinWaits("B", 20);
    expect([...c10.waitSet]).toEqual(["A"]);
    expect([...c20.waitSet]).toEqual(["A"]);
    expect([...c30.waitSet].sort()).toEqual(["A", "B"]);
  });

  it("holds a joined node's commits until that node acks them", () => {
    const cluster = fakeCluster({ A: 30, B: 20 });
    const book = bookWith(commit(10, ["A"]), commit(30, ["A"]));
    book.joinWaits("B", 20);
    const first = book.pass(cluster.view, { now: 0, durableLsns: false });
    expect(outcomes(first)).toEqual([[10, "acked"]]);
    expect(book.size).toBe(1);
    cluster.acked.set("B", 30);
    const second = book.pass(cluster.view, { now: 1, durableLsns: false });
    expect(outcomes(second)).toEqual([[30, "acked"]]);
  });
});

describe("AckBook.pass before the deadline", () => {
  it("answers a commit once every node of its wait set acked at or past its LSN", () => {
    const cluster = fakeCluster({ A: 10, B: 9 });
    const book = bookWith(commit(10, ["A", "B"]));
    const first = book.pass(cluster.view, { now: 0, durableLsns: false });
    expect(first.answered).toEqual([]);
    expect(book.size).toBe(1);

    cluster.acked.set("B", 15);
    const second = book.pass(cluster.view, { now: 1, durableLsns: false });
    expect(outcomes(second)).toEqual([[10, "acked"]]);
    expect(second.answered[0]?.commit.token).toBe("commit-10");
    expect(book.size).toBe(0);
    expect(second.wakeAt).toBeNull();
  });

  it("answers a commit with an empty wait set at once", () => {
    const book = bookWith(commit(5, []));
    const result = book.pass(fakeCluster().view, { now: 0, durableLsns: false });
    expect(outcomes(result)).toEqual([[5, "acked"]]);
  });

  it("removes nodes that acked from the wait set as it goes", () => {
    const c = commit(10, ["A", "B", "C"]);
    const book = bookWith(c);
    book.pass(fakeCluster({ A: 10, B: 3, C: 11 }).view, { now: 0, durableLsns: false });
    expect([...c.waitSet]).toEqual(["B"]);
  });

  it("wakes at the deadline of a commit still waiting on a coherent node", () => {
    const book = bookWith(commit(10, ["A"], { deadline: 700, giveUpAt: 5000 }));
    const result = book.pass(fakeCluster({ A: 0 }).view, { now: 100, durableLsns: false });
    expect(result.answered).toEqual([]);
    expect(result.markIncoherent.size).toBe(0);
    expect(result.wakeAt).toBe(700);
  });

  it("answers commit 35 waiting only on fast node A in the same pass where commit 30 waits on slow node B", () => {
    // The seed's early-stop scenario: B acked 20, A acked 35.
    const cluster = fakeCluster({ A: 35, B: 20 });
    const book = bookWith(
      commit(30, ["B"], { deadline: 1000 }),
      commit(35, ["A"], { deadline: 1010 }),
      commit(45, ["A", "B"], { deadline: 1020 }),
    );
    const result = book.pass(cluster.view, { now: 500, durableLsns: false });

    expect(outcomes(result)).toEqual([[35, "acked"]]);
    expect(book.size).toBe(2);
    expect(book.oldestLsn()).toBe(30);
    // 30 and 35 are checked; 45 waits on B, already found behind 30, and is skipped.
    expect(result.checked).toBe(2);
    expect(result.skippedEarlyStop).toBe(1);
    expect(result.markIncoherent.size).toBe(0);
    expect(result.wakeAt).toBe(1000);
  });

  it("skips every later commit waiting on a node already found behind", () => {
    const book = bookWith(
      commit(30, ["B"]),
      commit(40, ["B"]),
      commit(50, ["B", "C"]),
      commit(60, ["C"]),
    );
    const result = book.pass(fakeCluster({ B: 20, C: 60 }).view, {
      now: 0,
      durableLsns: false,
    });
    expect(outcomes(result)).toEqual([[60, "acked"]]);
    expect(result.checked).toBe(2);
    expect(result.skippedEarlyStop).toBe(2);
  });

  it("does not let early stop hold a commit whose deadline is due", () => {
    // A replayed request can wait on an older LSN with a later deadline, so a
    // later LSN can be due while the earlier one is not.
    const book = bookWith(
      commit(30, ["B"], { deadline: 1000 }),
      commit(45, ["B"], { deadline: 400 }),
    );
    const cluster = fakeCluster({ B: 20 });
    cluster.lease.set("B", 0);
    const result = book.pass(cluster.view, { now: 500, durableLsns: false });
    expect(result.skippedEarlyStop).toBe(0);
    expect(result.checked).toBe(2);
    expect([...result.markIncoherent]).toEqual(["B"]);
    // B held no lease, so commit 45 drops it and is answered; commit 30 still waits.
    expect(outcomes(result)).toEqual([[45, "acked"]]);
    expect(book.oldestLsn()).toBe(30);
  });

  it("drops an incoherent node before the deadline once its lease expired", () => {
    const cluster = fakeCluster({ A: 10, B: 0 });
    cluster.coherent.set("B", false);
    cluster.lease.set("B", 300);
    const book = bookWith(commit(10, ["A", "B"], { deadline: 1000 }));

    const held = book.pass(cluster.view, { now: 200, durableLsns: false });
    expect(held.answered).toEqual([]);
    expect(held.wakeAt).toBe(300);
    // An incoherent node is not reported again.
    expect(held.markIncoherent.size).toBe(0);

    const released = book.pass(cluster.view, { now: 300, durableLsns: false });
    expect(outcomes(released)).toEqual([[10, "acked"]]);
  });
});

describe("AckBook.pass at the deadline", () => {
  it("marks a behind node incoherent but keeps it in the wait set until its lease expires", () => {
    const cluster = fakeCluster({ A: 10, B: 5 });
    cluster.lease.set("B", 1500);
    const c = commit(10, ["A", "B"], { deadline: 1000, giveUpAt: 30_000 });
    const book = bookWith(c);

    const atDeadline = book.pass(cluster.view, { now: 1000, durableLsns: false });
    expect([...atDeadline.markIncoherent]).toEqual(["B"]);
    expect(atDeadline.answered).toEqual([]);
    expect([...c.waitSet]).toEqual(["B"]);
    expect(atDeadline.wakeAt).toBe(1500);

    // The master marked B incoherent; its lease still runs.
    cluster.coherent.set("B", false);
    const beforeExpiry = book.pass(cluster.view, { now: 1499, durableLsns: false });
    expect(beforeExpiry.answered).toEqual([]);
    expect(beforeExpiry.markIncoherent.size).toBe(0);
    expect(beforeExpiry.wakeAt).toBe(1500);

    const atExpiry = book.pass(cluster.view, { now: 1500, durableLsns: false });
    expect(outcomes(atExpiry)).toEqual([[10, "acked"]]);
    expect(book.size).toBe(0);
  });

  it("drops a behind node in the deadline pass itself when it holds no lease", () => {
    const cluster = fakeCluster({ A: 10, B: 5 });
    cluster.lease.set("B", 900);
    const book = bookWith(commit(10, ["A", "B"], { deadline: 1000 }));
    const result = book.pass(cluster.view, { now: 1000, durableLsns: false });
    expect([...result.markIncoherent]).toEqual(["B"]);
    expect(outcomes(result)).toEqual([[10, "acked"]]);
  });

  it("answers a commit whose behind node catches up before its lease expires", () => {
    const cluster = fakeCluster({ B: 5 });
    cluster.lease.set("B", 2000);
    const book = bookWith(commit(10, ["B"], { deadline: 1000 }));
    book.pass(cluster.view, { now: 1000, durableLsns: false });
    cluster.coherent.set("B", false);
    cluster.acked.set("B", 10);
    const result = book.pass(cluster.view, { now: 1200, durableLsns: false });
    expect(outcomes(result)).toEqual([[10, "acked"]]);
  });

  it("wakes at the earliest of lease expiry and give-up time", () => {
    const cluster = fakeCluster({ B: 5 });
    cluster.lease.set("B", 9000);
    const book = bookWith(commit(10, ["B"], { deadline: 1000, giveUpAt: 4000 }));
    const result = book.pass(cluster.view, { now: 1000, durableLsns: false });
    expect(result.wakeAt).toBe(4000);
  });

  it("answers timeout once the give-up time passed, whatever the acks", () => {
    const cluster = fakeCluster({ B: 5 });
    cluster.lease.set("B", 99_999);
    const book = bookWith(
      commit(10, ["B"], { deadline: 1000, giveUpAt: 4000 }),
      commit(11, ["B"], { deadline: 1001, giveUpAt: 4001 }),
    );
    const result = book.pass(cluster.view, { now: 4000, durableLsns: false });
    expect(outcomes(result)).toEqual([[10, "timeout"]]);
    expect(book.oldestLsn()).toBe(11);
    expect(result.wakeAt).toBe(4001);
  });
});

describe("AckBook.pass with durable_lsns", () => {
  const sanctioned = ["A", "B", "C", "D"];

  it("answers acked when the wait set acked and a majority of sanctioned nodes did", () => {
    const book = bookWith(commit(10, ["A", "B"], { sanctioned }));
    const result = book.pass(fakeCluster({ A: 10, B: 10 }).view, {
      now: 0,
      durableLsns: true,
    });
    expect(outcomes(result)).toEqual([[10, "acked"]]);
  });

  it("waits for the deadline and then answers not-durable without a majority", () => {
    // Only A was coherent when the wait began: its ack alone is two of five nodes.
    const cluster = fakeCluster({ A: 10 });
    const book = bookWith(commit(10, ["A"], { sanctioned, deadline: 1000 }));

    const early = book.pass(cluster.view, { now: 500, durableLsns: true });
    expect(early.answered).toEqual([]);
    expect(early.wakeAt).toBe(1000);

    const atDeadline = book.pass(cluster.view, { now: 1000, durableLsns: true });
    expect(outcomes(atDeadline)).toEqual([[10, "not-durable"]]);
    expect(book.size).toBe(0);
  });

  it("answers acked before the deadline when an out-of-wait-set node makes the majority", () => {
    const cluster = fakeCluster({ A: 10 });
    const book = bookWith(commit(10, ["A"], { sanctioned, deadline: 1000 }));
    expect(book.pass(cluster.view, { now: 100, durableLsns: true }).answered).toEqual([]);
    cluster.acked.set("C", 12);
    const result = book.pass(cluster.view, { now: 200, durableLsns: true });
    expect(outcomes(result)).toEqual([[10, "acked"]]);
  });

  it("answers the same commit acked when durable_lsns is off", () => {
    const book = bookWith(commit(10, ["A"], { sanctioned, deadline: 1000 }));
    const result = book.pass(fakeCluster({ A: 10 }).view, { now: 500, durableLsns: false });
    expect(outcomes(result)).toEqual([[10, "acked"]]);
  });
});

describe("AckBook.pass properties", () => {
  const NODES = ["A", "B", "C", "D"] as const;
  const DEADLINE = 1_000_000;

  type Event = { kind: "ack"; node: number; step: number } | { kind: "pass"; advance: number };

  const eventArb: fc.Arbitrary<Event> = fc.oneof(
    fc.record({
      kind: fc.constant("ack" as const),
      node: fc.integer({ min: 0, max: NODES.length - 1 }),
      step: fc.integer({ min: 0, max: 15 }),
    }),
    fc.record({
      kind: fc.constant("pass" as const),
      advance: fc.integer({ min: 0, max: 1000 }),
    }),
  );

  const commitsArb = fc.uniqueArray(
    fc.record({
      lsn: fc.integer({ min: 1, max: 60 }),
      waitOn: fc.subarray([...NODES]),
    }),
    { minLength: 1, maxLength: 12, selector: (c) => c.lsn },
  );

  it("never answers acked before the whole original wait set acked, and answers all once every node acked the max LSN", () => {
    fc.assert(
      fc.property(
        commitsArb,
        fc.array(eventArb, { maxLength: 60 }),
        fc.boolean(),
        (specs, events, durableLsns) => {
          const cluster = fakeCluster();
          for (const node of NODES) cluster.lease.set(node, DEADLINE * 10);
          const original = new Map<number, readonly string[]>();
          const book = new AckBook<string>();
          for (const spec of specs) {
            original.set(spec.lsn, spec.waitOn);
            book.add(
              commit(spec.lsn, spec.waitOn, {
                sanctioned: NODES,
                deadline: DEADLINE,
                giveUpAt: DEADLINE * 2,
              }),
            );
          }
          const answered = new Map<number, Outcome>();
          const fullyAcked = (lsn: number) =>
            (original.get(lsn) ?? []).every((id) => cluster.view.ackedLsn(id) >= lsn);
          const runPass = (now: number) => {
            const result = book.pass(cluster.view, { now, durableLsns });
            expect(result.markIncoherent.size).toBe(0);
            for (const { commit: c, outcome } of result.answered) {
              expect(answered.has(c.lsn)).toBe(false);
              answered.set(c.lsn, outcome);
              expect(outcome).toBe("acked");
              expect(fullyAcked(c.lsn)).toBe(true);
            }
            if (!durableLsns) {
              // Early stop never delays a commit whose wait set is fully acked.
              for (const spec of specs) {
                if (fullyAcked(spec.lsn)) expect(answered.has(spec.lsn)).toBe(true);
              }
            }
          };

          let now = 0;
          for (const event of events) {
            if (event.kind === "ack") {
              const node = NODES[event.node] ?? "A";
              cluster.acked.set(node, cluster.view.ackedLsn(node) + event.step);
            } else {
              now = Math.min(now + event.advance, DEADLINE - 1);
              runPass(now);
            }
          }

          const maxLsn = Math.max(...specs.map((s) => s.lsn));
          for (const node of NODES) {
            cluster.acked.set(node, Math.max(cluster.view.ackedLsn(node), maxLsn));
          }
          runPass(DEADLINE - 1);
          expect(book.size).toBe(0);
          expect(answered.size).toBe(specs.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("ack book at scale", () => {
  it("passes over 200,000 waiting commits without overflowing the stack", () => {
    const book = new AckBook<number>();
    for (let lsn = 1; lsn <= 200_000; lsn++) {
      book.add({
        lsn,
        waitSet: new Set(["r1"]),
        sanctioned: ["r1"],
        deadline: 1_000_000,
        giveUpAt: 2_000_000,
        token: lsn,
      });
    }
    const acked = 50_000;
    const view = {
      ackedLsn: () => acked,
      isCoherent: () => true,
      leaseUntil: () => 0,
    };
    const result = book.pass(view, { now: 0, durableLsns: false });
    expect(result.answered).toHaveLength(acked);
    expect(book.size).toBe(150_000);
    expect(book.oldestLsn()).toBe(acked + 1);
  });
});

describe("AckBook.adoptFullSync (sync_mode back to full)", () => {
  it("a commit waiting on a quorum now waits for every node that may serve and has not acked it", () => {
    const cluster = fakeCluster({ A: 5, B: 5, C: 0 });
    const book = new AckBook<string>();
    // Waiting on a quorum of 2 of {A, B}: acked by both, it would be answered at the next pass.
    book.add({ ...commit(5, ["A", "B"]), quorum: 2 });
    // C was not in its wait set (it rejoined after it began), D already has it.
    cluster.acked.set("D", 9);
    book.adoptFullSync(["A", "B", "C", "D"], cluster.view);
    expect(outcomes(book.pass(cluster.view, { now: 0, durableLsns: false }))).toEqual([]);
    cluster.acked.set("C", 5);
    expect(outcomes(book.pass(cluster.view, { now: 0, durableLsns: false }))).toEqual([
      [5, "acked"],
    ]);
  });

  it("leaves commits already under full rules as they are", () => {
    const cluster = fakeCluster({ A: 0, B: 3 });
    const book = new AckBook<string>();
    book.add(commit(3, ["B"]));
    book.adoptFullSync(["A", "B"], cluster.view);
    expect(outcomes(book.pass(cluster.view, { now: 0, durableLsns: false }))).toEqual([
      [3, "acked"],
    ]);
  });
});
