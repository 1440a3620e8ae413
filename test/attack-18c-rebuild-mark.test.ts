/**
 * Attack 18c on the waiter's "check the new commit alone" (durable-objects/
 * master/waiter.ts, core/ack-book.ts checkOne): a replica marked incoherent
 * for a REBUILD (or a divergence) asks for no pass.
 *
 * SnapshotStreams.request (master/snapshot-stream.ts) and the relay host's
 * `diverged` hook (master/core.ts) call ReplicaSet.markIncoherent, which only
 * tells the watchers: no requestPass, unlike checkUnreachable / checkLagging /
 * checkSlow / removal / the waiter's own marks. A commit C1 that waits on that
 * replica can be answered as soon as the replica's lease has run out (the ack
 * book drops an incoherent node whose lease expired). A full pass at every new
 * commit (the old waiter, and test/full-pass-waiter.ts, the reference the
 * change promises to match) answers C1 at the next commit C2. The check of C2
 * alone does not: the planned wake is C1's rep_timeout_ms deadline, C2's own
 * check brings no earlier one (its wait set is empty), and no ack comes (the
 * replica is being rebuilt, and its snapshot fails while it is stopped). C1
 * then waits out its whole deadline; with commit_timeout_ms = rep_timeout_ms
 * (allowed: the pair is ordered "at most") the deadline pass answers it
 * COMMIT_TIMEOUT instead of acked: a different OUTCOME for a write that is
 * committed and that the reference acknowledged seconds earlier, and C2
 * (a later LSN) acknowledged before C1.
 *
 * Sequence (one replica left, so no other ack brings a pass):
 *  1. tunables: durable_lsns off, rep_timeout_ms = commit_timeout_ms = 4 s,
 *     leases 150 ms, log_retain_records 0 (the log truncates to what R1 acked);
 *     remove replica-2..4; writes so the master truncates past LSN 0.
 *  2. replica-1 hangs every call (delay 60 s): C1 is committed and waits on it.
 *  3. replica-1 stopped (the calls in flight keep hanging: no failure, no ack),
 *     then its relay rewound to 0 (the fault route; a divergence takes the
 *     same path: requestSnapshot) -> "rebuild": marked incoherent, NO pass;
 *     the snapshot's first call fails (stopped): no ack, no pass.
 *  4. 300 ms later (its lease is out) C2 comes: waits on nobody, 200 at once.
 *     Expected (reference): C1 answered 200 in the same moment.
 *     Before the fix: C1 still outstanding; ~4 s after it began, COMMIT_TIMEOUT.
 *     ReplicaSet.markIncoherent now asks for a pass, whatever the reason.
 */
import { describe, expect, it } from "vitest";
import { call, exec, freshCluster, patchTunables, status, timed, waitUntil } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const admin = (c: string, method: string, path: string, body?: unknown) =>
  call(method, `/admin/clusters/${c}${path}`, body === undefined ? {} : { body });

describe("attack 18c: a rebuild mark asks for no pass", () => {
  it("a commit waiting only on the rebuilt replica is answered at the next commit", async () => {
    const c = freshCluster("a18c-rebuild");
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status,
    ).toBe(200);
    const tuned = await patchTunables(c, {
      debug_fault_injection: true,
      durable_lsns: false,
      rep_timeout_ms: 4_000,
      commit_timeout_ms: 4_000,
      coherency_lease_ms: 150,
      heartbeat_ms: 50,
      log_retain_records: 0,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    for (const id of ["replica-2", "replica-3", "replica-4"]) {
      const removed = await admin(c, "DELETE", `/replicas/${id}`);
      expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    }
    for (let i = 0; i < 5; i++) {
      expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('w')" }])).status).toBe(200);
    }
    await waitUntil(
      "the master truncated its log",
      async () =>
        ((await status(c)).body.master as unknown as { truncatedThrough: number })
          .truncatedThrough > 0,
      10_000,
      50,
    );
    // replica-1 hangs every call: no ack, no failure.
    expect((await admin(c, "POST", "/replicas/replica-1/delay", { ms: 60_000 })).status).toBe(200);
    await sleep(300);
    const t0 = Date.now();
    const c1 = timed(exec(c, [{ sql: "INSERT INTO t (v) VALUES ('c1')" }]));
    await waitUntil(
      "C1 waits",
      async () => (await status(c)).body.master.waiter.outstanding === 1,
      3_000,
      10,
    );
    expect((await admin(c, "POST", "/replicas/replica-1/stop")).status).toBe(200);
    const rewound = await admin(c, "POST", "/replicas/replica-1/rewind", { lsn: 0 });
    expect(rewound.status, JSON.stringify(rewound.body)).toBe(200);
    const r1 = (await status(c)).body.replicas.find((r) => r.id === "replica-1");
    expect(r1?.state).toBe("incoherent");
    // Its lease (150 ms from C1's batch) is out.
    await sleep(300);
    const c2 = await timed(exec(c, [{ sql: "INSERT INTO t (v) VALUES ('c2')" }]));
    expect(c2.status, JSON.stringify(c2.body)).toBe(200);
    const settled = await Promise.race([c1, sleep(1_000).then(() => null)]);
    const outstanding = (await status(c)).body.master.waiter.outstanding;
    const first = await c1;
    // Reference (a full pass at C2): C1 acked when C2 came.
    expect(
      {
        c1AnsweredWithin1sOfC2: settled !== null,
        outstandingAfter1s: outstanding,
        c1Status: first.status,
        c1Code: (first.body.error as { code?: string } | undefined)?.code ?? null,
        c1AfterC2Ms: first.at - c2.at,
        c1WaitedMs: first.at - t0,
      },
      "C1 answered acked when C2 arrived, as a full pass at every commit does",
    ).toMatchObject({ c1AnsweredWithin1sOfC2: true, outstandingAfter1s: 0, c1Status: 200 });
    await admin(c, "POST", "/replicas/replica-1/start");
    await admin(c, "POST", "/replicas/replica-1/delay", { ms: 0 });
  }, 60_000);
});
