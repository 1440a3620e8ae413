import { describe, expect, it } from "vitest";
import { compareAndSet, firstRecord } from "../core/directory-record";
import { chooseCandidate, inheritedReplicas } from "../core/handover";
import { judgeTerm, newerLog } from "../core/terms";

describe("term fencing (core/terms.ts)", () => {
  it("refuses an older term, whatever the message carries", () => {
    expect(judgeTerm(3, 3, { term: 2, termStartLsn: 1 }, 10)).toEqual({
      kind: "refuse",
      knownTerm: 3,
    });
    expect(judgeTerm(3, 3, { term: 0, termStartLsn: 0 }, 0)).toEqual({
      kind: "refuse",
      knownTerm: 3,
    });
  });

  it("takes the same term as it is", () => {
    expect(judgeTerm(2, 2, { term: 2, termStartLsn: 5 }, 100)).toEqual({ kind: "same" });
  });

  it("adopts a newer term when its log ends before the term's first record", () => {
    expect(judgeTerm(1, 1, { term: 2, termStartLsn: 11 }, 10)).toEqual({ kind: "adopt" });
    expect(judgeTerm(0, 0, { term: 1, termStartLsn: 1 }, 0)).toEqual({ kind: "adopt" });
  });

  it("a log that reaches the new term's first LSN under an older term has a tail that no longer exists", () => {
    expect(judgeTerm(1, 1, { term: 2, termStartLsn: 11 }, 11).kind).toBe("diverged-tail");
    expect(judgeTerm(1, 1, { term: 3, termStartLsn: 11 }, 40).kind).toBe("diverged-tail");
  });
});

describe("a term adopted ahead of its first message (a promotion without the master)", () => {
  it("is checked against the log when that message comes", () => {
    // Fenced into term 3 by the promotion; its log reaches the term's first LSN: a stale tail.
    expect(judgeTerm(3, 2, { term: 3, termStartLsn: 11 }, 11).kind).toBe("diverged-tail");
    expect(judgeTerm(3, 2, { term: 3, termStartLsn: 11 }, 10)).toEqual({ kind: "adopt" });
    // Once checked, the term's later messages are the same term.
    expect(judgeTerm(3, 3, { term: 3, termStartLsn: 11 }, 40)).toEqual({ kind: "same" });
  });

  it("the newer log is the later last term, then the longer", () => {
    expect(newerLog({ lastTerm: 3, lastLsn: 2 }, { lastTerm: 2, lastLsn: 9 })).toBe(true);
    expect(newerLog({ lastTerm: 2, lastLsn: 9 }, { lastTerm: 2, lastLsn: 8 })).toBe(true);
    expect(newerLog({ lastTerm: 2, lastLsn: 8 }, { lastTerm: 2, lastLsn: 8 })).toBe(false);
  });
});

describe("the directory's compare-and-set (core/directory-record.ts)", () => {
  const handover = {
    from: "node-0",
    lastLsn: 9,
    tunables: {},
    replicas: [],
    nextReplica: 5,
    messageFaults: null,
    leaseRemovals: null,
    leaseUntil: 0,
    maxLeaseMs: 500,
  };

  it("starts at term 1 with node-0", () => {
    expect(firstRecord(7)).toEqual({ term: 1, master: "node-0", since: 7 });
  });

  it("moves to the next term only from the expected one", () => {
    const first = firstRecord(0);
    const won = compareAndSet(first, 1, "replica-2", handover, 5);
    expect(won).toEqual({ ok: true, record: { term: 2, master: "replica-2", since: 5, handover } });
    if (!won.ok) return;
    // A second promotion that read term 1 loses: a term never has two masters.
    const late = compareAndSet(won.record, 1, "replica-3", handover, 6);
    expect(late.ok).toBe(false);
    expect(late.record).toBe(won.record);
  });
});

describe("the candidate rule (core/handover.ts)", () => {
  const replicas = [
    { id: "replica-1", state: "coherent" as const, ackedLsn: 8 },
    { id: "replica-2", state: "incoherent" as const, ackedLsn: 12 },
    { id: "replica-3", state: "coherent" as const, ackedLsn: 9 },
  ];

  it("takes the coherent replica furthest along, never an incoherent one ahead of it", () => {
    expect(chooseCandidate(replicas, undefined)).toEqual({ ok: true, id: "replica-3" });
  });

  it("takes a named coherent replica, refuses a named incoherent or unknown one", () => {
    expect(chooseCandidate(replicas, "replica-1")).toEqual({ ok: true, id: "replica-1" });
    expect(chooseCandidate(replicas, "replica-2").ok).toBe(false);
    expect(chooseCandidate(replicas, "replica-7").ok).toBe(false);
  });

  it("with no coherent replica there is no candidate", () => {
    expect(
      chooseCandidate([{ id: "replica-1", state: "incoherent", ackedLsn: 50 }], undefined).ok,
    ).toBe(false);
  });

  it("the new master's replicas are everyone else, the old master coherent among them", () => {
    const members = [
      { id: "replica-1", state: "coherent" as const, reason: null },
      { id: "replica-2", state: "incoherent" as const, reason: "ack-timeout" },
    ];
    expect(inheritedReplicas(members, "replica-1", "node-0")).toEqual([
      { id: "node-0", state: "coherent", reason: null },
      { id: "replica-2", state: "incoherent", reason: "ack-timeout" },
    ]);
  });
});
