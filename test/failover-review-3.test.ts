/**
 * Reproductions from an adversarial review of failover changes (a snapshot's
 * term counted as checked, the watchdog's cadence, the term an automatic
 * promotion expects, the config lock, transient refusals). Each `it` is named
 * for the behaviour the code must have.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { directoryStub } from "../durable-objects/directory";
import { nodeStub } from "../durable-objects/node-rpc";
import { memberStub } from "../workers/cluster";
import { call, exec, freshCluster, status, waitUntil } from "./helpers";
import { heartbeat } from "./review-helpers";

describe("finding 1: a snapshot stream of a deposed master that ends after the replica took a later term", () => {
  it("a snapshot's end from the master of an older term is not installed over a replica that already took a later term", async () => {
    // No master runs for this cluster name: every message is the test's.
    const c = freshCluster("zz-r3-snap-end");
    const replica = nodeStub(env, c, "replica-1");
    // node-0, master of term 1, begins a snapshot at its LSN 5. LSNs 3..5 are
    // its unacknowledged tail: term 2's master (replica-2) does not have them.
    await replica.installSnapshot({ phase: "begin", id: "zombie", lsn: 5, tables: 0, term: 1 });
    // A promotion without node-0: replica-2 is master of term 2, which began at
    // LSN 3; its first heartbeat reaches replica-1 while it is still rebuilding
    // (the term is adopted and checked: replica-1's applied LSN is 0).
    const during = await replica.append(heartbeat(c, "replica-2", 2, 3, 2));
    console.log("heartbeat of term 2 during the rebuild:", JSON.stringify(during));
    // node-0 has not heard of term 2 yet: the end of its stream arrives now.
    let installed: string;
    try {
      const end = await replica.installSnapshot({
        phase: "end",
        id: "zombie",
        lsn: 5,
        logEnd: 0,
        lastTerm: 1,
        term: 1,
        tables: [],
        objects: [{ type: "table", name: "zombie_only", sql: "CREATE TABLE zombie_only (k)" }],
        sequence: [],
        fts5Settings: [],
      });
      installed = `installed, appliedLsn ${end.appliedLsn}`;
    } catch (error) {
      installed = `refused: ${String(error)}`;
    }
    console.log("end of term 1's snapshot:", installed);
    // Term 2's master has since written and committed LSNs 3..5 of its own.
    const after = await replica.append(heartbeat(c, "replica-2", 2, 3, 5, 10_000));
    console.log("heartbeat of term 2 after the install:", JSON.stringify(after));
    const read = await memberStub(env, c, "replica-1").replicaQuery(
      {
        cluster: c,
        sql: "SELECT name FROM sqlite_schema WHERE name = 'zombie_only'",
        params: [],
        consistency: "strong",
        minLsn: 0,
      },
      "replica-1",
    );
    console.log("strong read on replica-1:", JSON.stringify(read));
    // Either the stale end is refused, or the replica is found to hold a log
    // term 2's master does not have. It must not ack LSN 5 of term 2 as its
    // own and serve node-0's state as a strong read.
    const coherentWithZombieState =
      installed.startsWith("installed") && !after.diverged && after.appliedLsn >= 3;
    expect(
      coherentWithZombieState,
      `a replica holding term 1's discarded tail is answered as coherent in term 2: ${JSON.stringify({ installed, after, read })}`,
    ).toBe(false);
  });
});

interface Status {
  master: { id: string; term: number; lsn: number };
}

const statusOf = async (c: string) => (await status(c)).body as unknown as Status;

async function masterOfTermAtLeast(c: string, term: number): Promise<Status["master"] | null> {
  try {
    const s = await statusOf(c);
    return s.master?.term >= term ? s.master : null;
  } catch {
    return null;
  }
}

describe("finding 3: the automatic promotion's expected term is the followed one", () => {
  it("a master of the newest term lost before any replica heard from it is still replaced automatically", async () => {
    const c = freshCluster("zz-r3-auto-unheard");
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE)" }])).status,
    ).toBe(200);
    const tuned = await call("PATCH", `/admin/clusters/${c}/tunables`, {
      body: {
        debug_fault_injection: true,
        rep_timeout_ms: 300,
        commit_timeout_ms: 3000,
        master_failover_ms: 800,
      },
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('a')" }], "a")).status).toBe(200);
    // Every replica follows node-0 in term 1.
    await new Promise((r) => setTimeout(r, 500));
    // From now on every relay message is held back 5-10 s (in order), node-0's
    // and, since the faults are in the config a promotion carries, its
    // successor's: a slow network between the master and the replicas.
    const faults = await call("POST", `/admin/clusters/${c}/faults`, {
      body: { seed: 7, delay: 1, delayMs: 10_000 },
    });
    expect(faults.status, JSON.stringify(faults.body)).toBe(200);
    expect((await call("POST", `/admin/clusters/${c}/master/lose`)).status).toBe(202);
    // The replicas promote one of them without node-0: the master of term 2.
    let second: Status["master"] | null = null;
    await waitUntil(
      "an automatic promotion to term 2",
      async () => {
        second = await masterOfTermAtLeast(c, 2);
        return second !== null;
      },
      15_000,
      50,
    );
    console.log("master of term 2:", JSON.stringify(second));
    // It is lost before any of its (held back) messages reached a replica:
    // each was fenced into term 2 but still follows term 1.
    const lost = await call("POST", `/admin/clusters/${c}/master/lose`);
    expect(lost.status, JSON.stringify(lost.body)).toBe(202);
    const silences: Record<string, unknown> = {};
    let third: Status["master"] | null = null;
    try {
      await waitUntil(
        "an automatic promotion to term 3",
        async () => {
          third = await masterOfTermAtLeast(c, 3);
          return third !== null;
        },
        12_000,
        100,
      );
    } finally {
      for (const id of ["replica-1", "replica-2", "replica-3", "replica-4"]) {
        try {
          silences[id] = await nodeStub(env, c, id).masterSilence();
        } catch (error) {
          silences[id] = String(error).slice(0, 80);
        }
      }
      const record = await directoryStub(env, c).read();
      console.log(
        "after losing term 2's master:",
        JSON.stringify({ directory: { term: record.term, master: record.master }, silences }),
      );
    }
    expect(third).not.toBeNull();
  });
});
