/**
 * Attack 18b on the waiter's "check the new commit alone", through the front
 * door: a replica the waiter ITSELF marks incoherent.
 *
 * The pass that finds commit C1 past its rep_timeout_ms deadline marks the
 * replicas behind it incoherent (the markIncoherent hook: ReplicaSet.
 * markIncoherent, which asks for no pass). In that same pass a later commit
 * C2, not due yet, still sees those replicas coherent, so it keeps them and
 * plans its wake at its own deadline: no wake is planned for the moment the
 * lease rule would drop them from C2's wait set, because for C2 they were not
 * incoherent yet. When their leases have already run out (a replica whose
 * calls hang gets no new lease once its window is full), C2 could be answered
 * by the very next pass. A full pass at every commit made it at C3; a check of
 * C3 alone does not (the planned wake is C2's deadline, not overdue), so C2
 * waited a whole rep_timeout_ms more, no ack coming (every replica hangs),
 * until every mark asked for a pass (ReplicaSet.markIncoherent).
 */
import { describe, expect, it } from "vitest";
import { call, exec, freshCluster, patchTunables, status, timed, waitUntil } from "./helpers";

const REPLICAS = ["replica-1", "replica-2", "replica-3", "replica-4"];
const delay = (c: string, id: string, ms: number) =>
  call("POST", `/admin/clusters/${c}/replicas/${id}/delay`, { body: { ms } });

describe("attack 18b: replicas marked by the waiter's own deadline pass", () => {
  it("a later commit still waiting on them is answered when the next commit arrives", async () => {
    const c = freshCluster("a18b-own");
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status,
    ).toBe(200);
    const tuned = await patchTunables(c, {
      debug_fault_injection: true,
      // On by default: C2 would then wait for its deadline either way (no majority).
      durable_lsns: false,
      rep_timeout_ms: 4_000,
      coherency_lease_ms: 150,
      heartbeat_ms: 50,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    // Every replica hangs in every call for a minute: no ack, no failure.
    for (const id of REPLICAS) expect((await delay(c, id, 60_000)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    const c1 = timed(exec(c, [{ sql: "INSERT INTO t (v) VALUES ('c1')" }], `${c}-c1`));
    await new Promise((r) => setTimeout(r, 2_000));
    const c2 = timed(exec(c, [{ sql: "INSERT INTO t (v) VALUES ('c2')" }], `${c}-c2`));
    // C1's deadline (t0 + 4 s): every replica marked incoherent, leases long out.
    const first = await c1;
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    await waitUntil(
      "every replica marked incoherent",
      async () =>
        (await status(c)).body.replicas
          .filter((r) => REPLICAS.includes(r.id))
          .every((r) => r.state === "incoherent"),
      5_000,
      20,
    );
    // C3 waits on nobody: answered at once. With a full pass at its arrival,
    // C2 (whose replicas are all incoherent with leases run out) is answered too.
    const c3 = await timed(exec(c, [{ sql: "INSERT INTO t (v) VALUES ('c3')" }], `${c}-c3`));
    expect(c3.status, JSON.stringify(c3.body)).toBe(200);
    const settled = await Promise.race([
      c2,
      new Promise<null>((r) => setTimeout(() => r(null), 1_000)),
    ]);
    const outstanding = (await status(c)).body.master.waiter.outstanding;
    // Without the pass after the marks: C2 still waits, until its own deadline (t0 + 6 s).
    expect(
      { c2AnsweredWithin1sOfC3: settled !== null, outstanding, c3AtMs: c3.at - t0 },
      "C2 answered when C3 arrived, as a full pass at every commit did",
    ).toMatchObject({ c2AnsweredWithin1sOfC3: true, outstanding: 0 });
    const second = await c2;
    expect(second.status).toBe(200);
    for (const id of REPLICAS) await delay(c, id, 0);
  }, 40_000);
});
