/** The rule of when a master may sleep (core/idle.ts), case by case. */
import { describe, expect, it } from "vitest";
import { awakeBecause, type IdleFacts } from "../core/idle";

const base: IdleFacts = {
  now: 100_000,
  lastActiveAt: 50_000,
  idleAfterMs: 30_000,
  failoverMs: 0,
  masterLsn: 10,
  frozen: null,
  configChanging: false,
  outstanding: 0,
  pinnedLsn: null,
  truncationPending: false,
  truncatedThrough: 6,
  replicas: [
    { id: "replica-1", state: "coherent", ackedLsn: 10, retrying: false, logTruncatedThrough: 6 },
    { id: "replica-2", state: "coherent", ackedLsn: 10, retrying: false, logTruncatedThrough: 6 },
  ],
};
const r2 = (patch: Partial<IdleFacts["replicas"][number]>) => ({
  replicas: [base.replicas[0], { ...base.replicas[1], ...patch }] as IdleFacts["replicas"],
});

describe("awakeBecause", () => {
  it("lets a quiet master with nothing left to do sleep", () => {
    expect(awakeBecause(base)).toBeNull();
    expect(awakeBecause({ ...base, replicas: [] })).toBeNull();
  });

  it.each<[string, Partial<IdleFacts>, RegExp]>([
    ["turned off", { idleAfterMs: 0 }, /idle_after_ms is 0/],
    ["automatic failover on", { failoverMs: 5_000 }, /master_failover_ms/],
    ["asked something lately", { lastActiveAt: 80_000 }, /active 20000 ms ago/],
    ["handing over", { frozen: "handover to replica-1" }, /handover/],
    ["a tunables change running", { configChanging: true }, /change is running/],
    ["commits waiting", { outstanding: 3 }, /3 commits wait/],
    ["a snapshot holding the log", { pinnedLsn: 7 }, /LSN 7/],
    ["log to truncate", { truncationPending: true }, /truncate/],
    ["a replica not coherent", r2({ state: "incoherent" }), /replica-2 is incoherent/],
    ["a replica catching up", r2({ state: "catching-up" }), /replica-2 is catching-up/],
    ["a replica behind", r2({ ackedLsn: 9 }), /replica-2 has acked LSN 9 of 10/],
    ["a replica being retried", r2({ retrying: true }), /replica-2 is being retried/],
    [
      "a replica whose log is not truncated yet",
      r2({ logTruncatedThrough: 5 }),
      /replica-2 has truncated its log through LSN 5 of 6/,
    ],
  ])("keeps it awake: %s", (_, patch, why) => {
    expect(awakeBecause({ ...base, ...patch })).toMatch(why);
  });

  it("the quiet time counts exactly: asleep at idle_after_ms, not a millisecond before", () => {
    expect(awakeBecause({ ...base, lastActiveAt: base.now - 29_999 })).not.toBeNull();
    expect(awakeBecause({ ...base, lastActiveAt: base.now - 30_000 })).toBeNull();
  });

  it("names the first replica that keeps it awake", () => {
    const replicas = [
      { ...base.replicas[0], retrying: true },
      { ...base.replicas[1], ackedLsn: 4 },
    ] as IdleFacts["replicas"];
    expect(awakeBecause({ ...base, replicas })).toMatch(/replica-1 is being retried/);
  });

  it("names a replica behind before one whose log is not truncated yet", () => {
    const replicas = [
      { ...base.replicas[0], logTruncatedThrough: 2 },
      { ...base.replicas[1], state: "incoherent" },
    ] as IdleFacts["replicas"];
    expect(awakeBecause({ ...base, replicas })).toMatch(/replica-2 is incoherent/);
  });
});
