/**
 * Linearizable across sleep and wake: register clients write, compare-and-set
 * and strongly read a few keys, reads pinned to the master and to each replica
 * in turn, in bursts separated by quiet spells long enough for the master to
 * sleep and every lease to run out; before the last burst the sleeping master
 * is also reset (as an eviction would). The history is checked with the
 * project's linearizability checker, and the replicas must have served reads
 * right after each wake (through leases asked for on demand).
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DosqliteClient } from "../client/index.ts";
import { checkLinearizability } from "../core/linearizability";
import { createRng } from "../core/message-faults";
import { operationsFromHistory } from "../core/register-history";
import { REGISTER_SETUP, RegisterClients } from "./chaos-registers";
import { WRITE_RETRY } from "./chaos-workload";
import { ADMIN, call, DATA, freshCluster, idleOf, patchTunables, untilAsleep } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const IDLE_MS = 300;
const CLIENTS = 4;

function client(cluster: string) {
  return new DosqliteClient({
    url: "http://cluster.test",
    cluster,
    token: DATA,
    adminToken: ADMIN,
    fetch: (url, init) =>
      exports.default.fetch(new Request(url, init)) as unknown as Promise<Response>,
    retry: false,
  });
}

describe("strong reads and writes across sleep and wake", () => {
  it("leave a linearizable history, replicas serving right after each wake", async () => {
    const c = freshCluster("idle-lin");
    const db = client(c);
    await db.exec(REGISTER_SETUP);
    const tuned = await patchTunables(c, {
      idle_after_ms: IDLE_MS,
      heartbeat_ms: 50,
      coherency_lease_ms: 200,
      debug_fault_injection: true,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    const registers = new RegisterClients({
      client: db,
      clients: CLIENTS,
      nodes: ["master", "replica-1", "replica-2", "replica-3", "replica-4"],
      runTag: c,
      retry: WRITE_RETRY,
    });
    const burst = async (ms: number, seed: number) => {
      const until = Date.now() + ms;
      await Promise.all(
        Array.from({ length: CLIENTS }, async (_, n) => {
          const rng = createRng(seed, n);
          while (Date.now() < until) await registers.op(n, rng);
        }),
      );
    };
    const quiet = async () => {
      await untilAsleep(c, 10_000);
      // Every lease granted before the sleep has run out.
      await sleep(400);
    };
    const servedByReplicas = () =>
      registers.history.events.filter(
        (e) => e.type === "ok" && typeof e.node === "string" && e.node.startsWith("replica-"),
      ).length;

    await burst(1_000, 1);
    let replicaReads = servedByReplicas();
    for (const [round, reset] of [
      [2, false],
      [3, true],
    ] as const) {
      await quiet();
      if (reset) {
        const crashed = await call("POST", `/admin/clusters/${c}/master/crash`, { body: {} });
        expect(crashed.status, JSON.stringify(crashed.body)).toBe(202);
      }
      await burst(1_000, round);
      const now = servedByReplicas();
      expect(now, `replicas served strong reads after wake ${round - 1}`).toBeGreaterThan(
        replicaReads,
      );
      replicaReads = now;
      // The burst woke it (a reset master starts awake, its counts afresh).
      if (!reset) expect((await idleOf(c)).wakes).toBeGreaterThanOrEqual(1);
    }
    const report = checkLinearizability(operationsFromHistory(registers.history.events));
    expect(registers.counts.reads).toBeGreaterThan(20);
    expect(registers.counts.writes + registers.counts.cas).toBeGreaterThan(10);
    expect(report.linearizable, JSON.stringify(report.keys)).toBe(true);
  });
});
