/**
 * Attack 18c on the waiter's "check the new commit alone" (durable-objects/
 * master/waiter.ts): the ack of a REMOVED replica asks for no pass.
 *
 * A removed replica stays in the wait sets of the commits that began with it
 * until it acks or its last lease runs out (ReplicaSet.departed; its acked LSN
 * is read live from its retired relay). Its relay is retired, but a call
 * already in flight still comes back: RelayLink.onResponse -> takeAck raises
 * relay.ackedLsn, then ReplicaSet.onAck finds no entry and returns BEFORE
 * changed(), so no pass is asked for. The commit C1 that waited only on that
 * replica is now answerable. The old waiter (and test/full-pass-waiter.ts, the
 * reference the change promises to match) answered it at the next commit: here
 * an idempotent retry of C1 itself. The check of the retry alone answers the
 * RETRY 200 (its own wait set is all acked) and leaves the original C1 waiting
 * for its rep_timeout_ms deadline (the departed replica's lease, 10 s, is
 * later), which with commit_timeout_ms = rep_timeout_ms answers it
 * COMMIT_TIMEOUT. One client sees its write acknowledged on the retry while
 * its first request, for the same LSN, is told the commit timed out; a full
 * pass answers both 200 at the retry.
 *
 * Sequence: replica-2..4 removed first (any ack of a live replica asks for a
 * pass, which would hide this), tunables durable_lsns off, rep_timeout_ms = commit_timeout_ms =
 * 3 s, coherency_lease_ms 10 s. replica-1's calls take 1 s (delay); C1 (with
 * an idempotency key) waits on replica-1;
 * replica-1 is removed (a pass: C1 still waits, its lease runs 10 s); its
 * in-flight batch acks C1 about 1 s in (no pass); at 1.5 s the client retries
 * C1 with the same key and body.
 * Expected (reference): retry 200 and C1 200 at the retry. Before the fix:
 * retry 200 at once, C1 504 COMMIT_TIMEOUT at 3 s. ReplicaSet.onAck now asks
 * for a pass when the replica is gone.
 */
import { describe, expect, it } from "vitest";
import { call, exec, freshCluster, patchTunables, status, timed } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const admin = (c: string, method: string, path: string, body?: unknown) =>
  call(method, `/admin/clusters/${c}${path}`, body === undefined ? {} : { body });

describe("attack 18c: a removed replica's late ack asks for no pass", () => {
  it("the original commit is answered with its retry", async () => {
    const c = freshCluster("a18c-removed");
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status,
    ).toBe(200);
    // Only replica-1 left: any other replica's heartbeat ack would bring a pass.
    for (const id of ["replica-2", "replica-3", "replica-4"]) {
      const gone = await admin(c, "DELETE", `/replicas/${id}`);
      expect(gone.status, JSON.stringify(gone.body)).toBe(200);
    }
    // Their last leases (500 ms) run out: they leave every new wait set.
    await sleep(700);
    const tuned = await patchTunables(c, {
      debug_fault_injection: true,
      durable_lsns: false,
      rep_timeout_ms: 3_000,
      commit_timeout_ms: 3_000,
      coherency_lease_ms: 10_000,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    expect((await admin(c, "POST", "/replicas/replica-1/delay", { ms: 1_000 })).status).toBe(200);
    // Let the calls sent before the delay drain.
    await sleep(1_200);
    const statements = [{ sql: "INSERT INTO t (v) VALUES ('c1')" }];
    const key = `${c}-c1`;
    const t0 = Date.now();
    const c1 = timed(exec(c, statements, key));
    await sleep(150);
    const removed = await admin(c, "DELETE", "/replicas/replica-1");
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    expect((await status(c)).body.master.waiter.outstanding).toBe(1);
    // replica-1's batch with C1 comes back about 1 s after it left.
    await sleep(Math.max(0, t0 + 1_500 - Date.now()));
    const retry = await timed(exec(c, statements, key));
    const settled = await Promise.race([c1, sleep(500).then(() => null)]);
    const first = await c1;
    expect(
      {
        retryStatus: retry.status,
        c1AnsweredWithRetry: settled !== null,
        c1Status: first.status,
        c1Code: (first.body.error as { code?: string } | undefined)?.code ?? null,
        c1AfterRetryMs: first.at - retry.at,
      },
      "C1 answered 200 when its retry was, as a full pass at every commit does",
    ).toMatchObject({ retryStatus: 200, c1AnsweredWithRetry: true, c1Status: 200 });
  }, 60_000);
});
