/**
 * The Waiter checks a new commit on its own (AckBook.checkOne) and makes a
 * full pass only on acks, on changes that ask for one, at its planned wake, or
 * when a commit comes while that wake is overdue. Raced here against a waiter
 * that makes a full pass at every new commit (test/full-pass-waiter.ts), on
 * the same events, over a view that behaves as the master's does
 * (master/replica-set.ts, master/core.ts, master/admin.ts):
 *
 * - an ack raises a node's acked LSN and asks for a pass;
 * - a coherent node may be granted a lease (no pass);
 * - the master's own checks may demote a node (a pass), an incoherent one may
 *   rejoin (joinWaits and a pass);
 * - the waiter's own marks demote and ask for a pass, as every mark does;
 * - a change of durable_lsns asks for a pass (PATCH /tunables);
 * - a new commit waits on the coherent nodes and every node whose lease
 *   still runs; a replay waits again on an older LSN;
 * - a node may be removed (marked with a pass, out of the sanctioned set
 *   durable_lsns counts, its lease and acked LSN kept while commits wait on
 *   it, and its calls in flight may still ack, with a pass) or added
 *   (incoherent and sanctioned from then on, no pass: it only holds commits up);
 * - the timer fires at the planned wake, late, or never.
 *
 * Every commit must be answered during the same event, with the same outcome.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { NodeView, Outcome } from "../core/ack-book";
import { Waiter } from "../durable-objects/master/waiter";
import { FullPassWaiter } from "./full-pass-waiter";

const NODES = ["A", "B", "C", "D"] as const;
const REP_TIMEOUT = 300;
const LEASE_MS = 120;

type Event =
  | { kind: "commit"; quorum: number | null; extra: number }
  | { kind: "replay"; back: number }
  | { kind: "ack"; node: number; step: number }
  | { kind: "lease"; node: number }
  | { kind: "demote"; node: number }
  | { kind: "rejoin"; node: number }
  | { kind: "remove"; node: number }
  | { kind: "add"; node: number }
  | { kind: "durable" }
  | { kind: "advance"; ms: number };

const node = fc.integer({ min: 0, max: NODES.length - 1 });
const eventArb: fc.Arbitrary<Event> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("commit" as const),
      quorum: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null, freq: 4 }),
      extra: fc.integer({ min: 0, max: 400 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("replay" as const), back: fc.nat(6) }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant("ack" as const), node, step: fc.nat(3) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("lease" as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("demote" as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("rejoin" as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("remove" as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("add" as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("durable" as const) }) },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.nat(200) }),
  },
);

type Timer = "on-time" | "late" | "silent";

const scenarioArb = fc.record({
  events: fc.array(eventArb, { minLength: 10, maxLength: 60 }),
  durable: fc.boolean(),
  timer: fc.constantFrom<Timer>("on-time", "late", "silent"),
  leases: fc.array(fc.nat(400), { minLength: NODES.length, maxLength: NODES.length }),
  /** D is a member from the start, or only once added. */
  dMember: fc.boolean(),
});
type Scenario = typeof scenarioArb extends fc.Arbitrary<infer S> ? S : never;

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

interface Answer {
  id: number;
  outcome: Outcome;
  /** The index of the event during which it was answered. */
  at: number;
}

/** Plays the scenario on the Waiter, or (`reference`) on the full-pass one. */
async function play(s: Scenario, reference: boolean): Promise<Answer[]> {
  const acked = new Map<string, number>(NODES.map((n) => [n, 0]));
  const members = new Set<string>(NODES.filter((n) => n !== "D" || s.dMember));
  /** Removed nodes: no rejoin, no lease, acks of their calls in flight still count. */
  const removed = new Set<string>();
  const coherent = new Map<string, boolean>(NODES.map((n) => [n, members.has(n)]));
  const lease = new Map<string, number>(
    NODES.map((n, i) => [n, members.has(n) ? (s.leases[i] ?? 0) : 0]),
  );
  const durable = { on: s.durable };
  const clock = { now: 0 };
  let planned: number | null = null;
  let step = -1;
  const answers: Answer[] = [];
  const view: NodeView = {
    ackedLsn: (id) => acked.get(id) ?? 0,
    isCoherent: (id) => members.has(id) && coherent.get(id) === true,
    leaseUntil: (id) => lease.get(id) ?? 0,
  };
  const hooks = {
    now: () => clock.now,
    durableLsns: () => durable.on,
    sanctioned: () => NODES.filter((n) => members.has(n)),
    // As the master's (ReplicaSet.markIncoherent): demoted, and a pass asked for.
    markIncoherent: (ids: Set<string>) => {
      for (const id of ids) coherent.set(id, false);
      waiter.requestPass();
    },
    wakeAt: (at: number | null) => {
      planned = at;
    },
    answered: () => {},
    passed: () => {},
  };
  const waiter = reference ? new FullPassWaiter(view, hooks) : new Waiter(view, hooks);
  let lsn = 0;
  let ids = 0;
  const committed: number[] = [];
  const hold = (commitLsn: number, quorum: number | null, extra: number) => {
    const id = ids++;
    const waitSet = new Set(
      NODES.filter(
        (n) =>
          (members.has(n) || removed.has(n)) &&
          (view.isCoherent(n) || clock.now < (lease.get(n) ?? 0)),
      ),
    );
    const q = quorum === null ? undefined : Math.min(quorum, waitSet.size);
    void waiter
      .wait({
        lsn: commitLsn,
        waitSet,
        sanctioned: hooks.sanctioned(),
        deadline: clock.now + REP_TIMEOUT,
        giveUpAt: clock.now + REP_TIMEOUT + extra,
        ...(q === undefined ? {} : { quorum: q }),
        path: "handoff",
      })
      .then((outcome) => answers.push({ id, outcome, at: step }));
  };
  let lateSkip = false;
  for (const event of s.events) {
    step++;
    const id = "node" in event ? (NODES[event.node] as string) : "";
    switch (event.kind) {
      case "commit":
        lsn++;
        committed.push(lsn);
        hold(lsn, event.quorum, event.extra);
        break;
      case "replay": {
        const old = committed[Math.max(0, committed.length - 1 - event.back)];
        if (old !== undefined) hold(old, null, 0);
        break;
      }
      case "ack":
        // A member's ack, or a removed node's call still in flight: a pass either way.
        if (members.has(id) || removed.has(id)) {
          acked.set(id, Math.min(lsn, (acked.get(id) ?? 0) + event.step));
          waiter.requestPass();
        }
        break;
      case "lease":
        if (view.isCoherent(id)) lease.set(id, Math.max(lease.get(id) ?? 0, clock.now + LEASE_MS));
        break;
      case "demote":
        if (view.isCoherent(id)) {
          coherent.set(id, false);
          waiter.requestPass();
        }
        break;
      case "remove":
        if (members.has(id)) {
          coherent.set(id, false);
          members.delete(id);
          removed.add(id);
          waiter.requestPass();
        }
        break;
      case "add":
        // Ids are never reused: only D, and only if it never was a member.
        if (id === "D" && !members.has(id) && !removed.has(id)) {
          members.add(id);
          coherent.set(id, false);
        }
        break;
      case "rejoin":
        if (members.has(id) && coherent.get(id) === false) {
          coherent.set(id, true);
          waiter.joinWaits(id, acked.get(id) ?? 0);
          waiter.requestPass();
        }
        break;
      case "durable":
        durable.on = !durable.on;
        waiter.requestPass();
        break;
      case "advance": {
        clock.now += event.ms;
        // A late timer misses every other advance, delivering at the one after.
        if (s.timer === "late") lateSkip = !lateSkip;
        const fire = s.timer === "on-time" || (s.timer === "late" && !lateSkip);
        if (fire && planned !== null && clock.now >= planned) waiter.pass();
        break;
      }
    }
    await settle();
  }
  // Whatever still waits is decided long after every give-up time.
  step++;
  clock.now += 10_000;
  waiter.pass();
  await settle();
  return answers.sort((a, b) => a.id - b.id);
}

describe("the Waiter raced against a full pass at every commit", () => {
  it("answers every commit during the same event with the same outcome", async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (s) => {
        const alone = await play(s, false);
        const full = await play(s, true);
        expect(alone).toEqual(full);
      }),
      { numRuns: 10_000 },
    );
  });

  it("answers a commit that kept nodes the same pass marked, at the next pass", async () => {
    // Commit 0's deadline marks A, B and C (leases out); commit 1, examined in
    // that pass while they were coherent, waits on nobody once the mark's pass
    // runs: answered in the same event, not at its own deadline.
    const s: Scenario = {
      durable: false,
      timer: "on-time",
      leases: [0, 0, 0, 0],
      dMember: false,
      events: [
        { kind: "commit", quorum: null, extra: 5_000 },
        { kind: "advance", ms: 200 },
        { kind: "commit", quorum: null, extra: 5_000 },
        { kind: "advance", ms: 100 },
      ],
    };
    const alone = await play(s, false);
    expect(alone).toEqual(await play(s, true));
    expect(alone.map((a) => [a.outcome, a.at])).toEqual([
      ["acked", 3],
      ["acked", 3],
    ]);
  });

  it("answers a commit held for a majority once durable_lsns is turned off", async () => {
    // Every node incoherent with no lease: only the majority rule holds commit 0.
    const s: Scenario = {
      durable: true,
      timer: "silent",
      leases: [0, 0, 0, 0],
      dMember: false,
      events: [
        { kind: "demote", node: 0 },
        { kind: "demote", node: 1 },
        { kind: "demote", node: 2 },
        { kind: "commit", quorum: null, extra: 0 },
        { kind: "advance", ms: 50 },
        { kind: "durable" },
      ],
    };
    const alone = await play(s, false);
    expect(alone).toEqual(await play(s, true));
    expect(alone.map((a) => [a.outcome, a.at])).toEqual([["acked", 5]]);
  });

  it("takes the wake a silent timer never delivered at the next commit", async () => {
    // Commit 2 comes past commit 0's deadline, which no timer delivered: its
    // arrival makes that pass, which marks A (its lease out since 320) and
    // answers commit 0; the pass the mark asks for answers commit 1, whose
    // only missing ack was A's, without waiting for its deadline.
    const s: Scenario = {
      durable: false,
      timer: "silent",
      leases: [0, 0, 0, 0],
      dMember: false,
      events: [
        { kind: "lease", node: 0 },
        { kind: "commit", quorum: null, extra: 5_000 },
        { kind: "ack", node: 1, step: 1 },
        { kind: "ack", node: 2, step: 1 },
        { kind: "advance", ms: 200 },
        { kind: "lease", node: 0 },
        { kind: "commit", quorum: null, extra: 5_000 },
        { kind: "ack", node: 1, step: 1 },
        { kind: "ack", node: 2, step: 1 },
        { kind: "advance", ms: 150 },
        { kind: "commit", quorum: null, extra: 5_000 },
        { kind: "advance", ms: 150 },
        { kind: "commit", quorum: null, extra: 5_000 },
      ],
    };
    const alone = await play(s, false);
    expect(alone).toEqual(await play(s, true));
    expect(alone.slice(0, 2).map((a) => [a.outcome, a.at])).toEqual([
      ["acked", 10],
      ["acked", 10],
    ]);
  });
});
