/**
 * The automatic-promotion watchdog's cadence (durable-objects/replica/watchdog.ts):
 * when it looks at the master's silence, and when a fence restarts the count.
 * A master lost just after a look must be noticed one period (plus the
 * stagger) after its last message, not nearly two periods later.
 */
import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ReplicaSettings } from "../core/protocol";
import { nodeStub } from "../durable-objects/node-rpc";
import { FailoverWatchdog } from "../durable-objects/replica/watchdog";
import { call, exec, freshCluster } from "./helpers";

const F = 2000;

/** Just enough of DurableObjectStorage for the watchdog: its KV and the alarm. */
function fakeStorage(failoverMs: number) {
  const kv = new Map<string, unknown>([["m:failover_ms", String(failoverMs)]]);
  const alarms: number[] = [];
  const storage = {
    kv: {
      get: (key: string) => kv.get(key),
      put: (key: string, value: unknown) => void kv.set(key, value),
    },
    setAlarm: async (at: number) => void alarms.push(at),
  };
  return { storage: storage as unknown as DurableObjectStorage, alarms };
}

const settings = (masterFailoverMs: number) => ({ masterFailoverMs }) as ReplicaSettings;

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the failover watchdog's looks", () => {
  it("after a look that found the master heard lately, the next look comes a period after its last message", () => {
    vi.spyOn(Math, "random").mockReturnValue(0.999);
    const { storage, alarms } = fakeStorage(F);
    const watchdog = new FailoverWatchdog(storage);
    const t = Date.now();
    watchdog.heard(settings(F), t);
    // The master's last message was at t; the alarm fires just short of a period later.
    expect(watchdog.due(t + F - 100)).toBe(false);
    const next = alarms.at(-1) ?? 0;
    // One period after the last message, plus at most half a period of stagger;
    // counted from the look it would be t + 2F - 100 at the earliest.
    expect(next).toBeGreaterThanOrEqual(t + F);
    expect(next).toBeLessThan(t + F + F / 2);
    expect(watchdog.due(next)).toBe(true);
  });

  it("while the master is heard, it looks once per period plus the stagger", () => {
    vi.spyOn(Math, "random").mockReturnValue(0);
    const { storage, alarms } = fakeStorage(F);
    const watchdog = new FailoverWatchdog(storage);
    let now = Date.now();
    for (let i = 0; i < 5; i++) {
      watchdog.heard(settings(F), now);
      expect(watchdog.due(now)).toBe(false);
      const next = alarms.at(-1) ?? 0;
      expect(next - now).toBe(F);
      now = next;
    }
  });

  it("the stagger spreads the replicas' looks over half a period", () => {
    const random = vi.spyOn(Math, "random");
    const t = Date.now();
    const looks = [0, 0.5, 0.999].map((r) => {
      random.mockReturnValue(r);
      const { storage, alarms } = fakeStorage(F);
      const watchdog = new FailoverWatchdog(storage);
      watchdog.heard(settings(F), t);
      watchdog.due(t + 10);
      return (alarms.at(-1) ?? 0) - t;
    });
    expect(looks).toEqual([F, F + F / 4, F + Math.floor(0.999 * (F / 2))]);
  });

  it("after a look that found it silent (a promotion tried), the next comes a period later, not at once", () => {
    vi.spyOn(Math, "random").mockReturnValue(0);
    const { storage, alarms } = fakeStorage(F);
    const watchdog = new FailoverWatchdog(storage);
    const t = Date.now();
    watchdog.heard(settings(F), t);
    expect(watchdog.due(t + F + 500)).toBe(true);
    expect(alarms.at(-1)).toBe(t + F + 500 + F);
  });

  it("a shorter period counts from the message that brought it, not from the look armed for the old one", () => {
    vi.spyOn(Math, "random").mockReturnValue(0);
    const { storage, alarms } = fakeStorage(600_000);
    const watchdog = new FailoverWatchdog(storage);
    const t = Date.now();
    watchdog.heard(settings(F), t);
    expect(watchdog.periodMs).toBe(F);
    expect(alarms.at(-1)).toBeLessThanOrEqual(t + F);
  });

  it("a fence into a later term restarts the count: the new master gets a whole period", () => {
    vi.spyOn(Math, "random").mockReturnValue(0);
    const { storage } = fakeStorage(F);
    const watchdog = new FailoverWatchdog(storage);
    const t = Date.now();
    watchdog.heard(settings(F), t);
    watchdog.newTerm(t + 5000);
    expect(watchdog.silenceMs(t + 5000)).toBe(0);
    expect(watchdog.due(t + 5000 + F - 1)).toBe(false);
    expect(watchdog.due(t + 5000 + F)).toBe(true);
  });
});

describe("a fence and the silence a replica reports", () => {
  it("a replica fenced into the next term reports the silence from the fence, not from the old master's last message", async () => {
    const c = freshCluster("wd-fence");
    expect((await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY)" }])).status).toBe(200);
    const tuned = await call("PATCH", `/admin/clusters/${c}/tunables`, {
      body: { debug_fault_injection: true, master_failover_ms: 500 },
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    // The master's link to replica-2 is cut: it stops hearing the master.
    expect((await call("POST", `/admin/clusters/${c}/replicas/replica-2/disconnect`)).status).toBe(
      200,
    );
    await new Promise((r) => setTimeout(r, 1200));
    const stub = nodeStub(env, c, "replica-2");
    expect(await stub.masterSilence()).toBeGreaterThanOrEqual(1000);
    // A promotion's fence into term 2: the master of term 2 has not had a chance to speak.
    const answer = await stub.prepareTerm(c, 2);
    expect(answer.knownTerm).toBe(2);
    expect(await stub.masterSilence()).toBeLessThan(500);
  });
});
