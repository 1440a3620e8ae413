/**
 * SURVIVED (attack 18d): the Waiter that checks a new commit alone
 * (durable-objects/master/waiter.ts) raced against the full-pass reference
 * (test/full-pass-waiter.ts) with what test/waiter-race.test.ts leaves out:
 * membership. A node may be REMOVED while commits wait (as admin.ts does:
 * marked incoherent, which asks for a pass, then out of the sanctioned set
 * that durable_lsns counts, its lease and its live acked LSN kept while
 * commits wait on it, then a pass), and a removed node's call in flight may
 * still ACK (ReplicaSet.onAck with no entry asks for a pass), and may be
 * marked for a rebuild or a divergence (a mark with a pass). A node may be
 * ADDED (incoherent, in the sanctioned set from then on, no pass: it can
 * only hold commits up). Every commit must be answered during the same event
 * with the same outcome; in 10,000 runs it is.
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
  | { kind: "commit"; extra: number }
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
      extra: fc.integer({ min: 0, max: 400 }),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("ack" as const), node, step: fc.nat(3) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("lease" as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("demote" as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("rejoin" as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("remove" as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("add" as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("durable" as const) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.nat(200) }) },
);

const scenarioArb = fc.record({
  events: fc.array(eventArb, { minLength: 10, maxLength: 60 }),
  durable: fc.boolean(),
  timer: fc.constantFrom("on-time", "late", "silent"),
  leases: fc.array(fc.nat(400), { minLength: NODES.length, maxLength: NODES.length }),
  /** D starts outside the cluster (added later) or inside. */
  dMember: fc.boolean(),
});
type Scenario = typeof scenarioArb extends fc.Arbitrary<infer S> ? S : never;

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

interface Answer {
  id: number;
  outcome: Outcome;
  at: number;
}

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
    // As the master's: demoted; the mark asks for a pass (ReplicaSet.markIncoherent).
    markIncoherent: (ids: Set<string>) => {
      for (const id of ids) {
        if (members.has(id) && coherent.get(id) === true) {
          coherent.set(id, false);
          waiter.requestPass();
        }
      }
    },
    wakeAt: (at: number | null) => {
      planned = at;
    },
    answered: () => {},
    passed: () => {},
  };
  const waiter: Waiter | FullPassWaiter = reference
    ? new FullPassWaiter(view, hooks)
    : new Waiter(view, hooks);
  let lsn = 0;
  let ids = 0;
  const hold = (commitLsn: number, extra: number) => {
    const id = ids++;
    const waitSet = new Set(
      NODES.filter(
        (n) =>
          (members.has(n) || removed.has(n)) &&
          (view.isCoherent(n) || clock.now < (lease.get(n) ?? 0)),
      ),
    );
    void waiter
      .wait({
        lsn: commitLsn,
        waitSet,
        sanctioned: hooks.sanctioned(),
        deadline: clock.now + REP_TIMEOUT,
        giveUpAt: clock.now + REP_TIMEOUT + extra,
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
        hold(lsn, event.extra);
        break;
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
      case "rejoin":
        if (members.has(id) && coherent.get(id) === false) {
          coherent.set(id, true);
          waiter.joinWaits(id, acked.get(id) ?? 0);
          waiter.requestPass();
        }
        break;
      case "remove":
        if (members.has(id)) {
          if (coherent.get(id) === true) {
            coherent.set(id, false);
            waiter.requestPass();
          }
          members.delete(id);
          removed.add(id);
          waiter.requestPass();
        }
        break;
      case "add":
        // Ids are never reused: only D, and only if it never was a member.
        if (id === "D" && !members.has(id) && !removed.has(id) && !s.dMember) {
          members.add(id);
          coherent.set(id, false);
        }
        break;
      case "durable":
        durable.on = !durable.on;
        waiter.requestPass();
        break;
      case "advance": {
        clock.now += event.ms;
        if (s.timer === "late") lateSkip = !lateSkip;
        const fire = s.timer === "on-time" || (s.timer === "late" && !lateSkip);
        if (fire && planned !== null && clock.now >= planned) waiter.pass();
        break;
      }
    }
    await settle();
  }
  step++;
  clock.now += 10_000;
  waiter.pass();
  await settle();
  return answers.sort((a, b) => a.id - b.id);
}

describe("attack 18d: the Waiter raced against a full pass, with membership changes", () => {
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
});
