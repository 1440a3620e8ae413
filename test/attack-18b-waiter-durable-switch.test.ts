/**
 * Attack 18b on the waiter's "check the new commit alone", through the front
 * door.
 *
 * The promise: no commit waits longer than it would have with a full pass at
 * every new commit, and durable_lsns switches behave as before. The waiter
 * now makes a full pass only on acks, on state changes that ask for one, at
 * the planned wake, or when a commit arrives while that wake is overdue.
 * A PATCH /tunables with durable_lsns=false asked for no pass (only a switch
 * back to full sync did, through adoptFullSync), and with every replica
 * stopped no ack brings one either.
 *
 * So a commit that waits only for a majority (its wait set is empty: every
 * replica is incoherent, its lease run out) was not answered when the next
 * commit arrived after durable_lsns was turned off: it waited for its own
 * rep_timeout_ms deadline, where a full pass at the next commit answered it
 * "acked" at once; and if durable_lsns was turned on again before that
 * deadline, the client got 503 NOT_DURABLE where it got 200. A change of the
 * tunables now asks the waiter for a pass (both tests fail without it).
 */
import { describe, expect, it } from "vitest";
import { call, exec, freshCluster, patchTunables, status, timed, waitUntil } from "./helpers";

const REPLICAS = ["replica-1", "replica-2", "replica-3", "replica-4"];
const stop = (c: string, id: string) => call("POST", `/admin/clusters/${c}/replicas/${id}/stop`);

/**
 * A cluster whose four replicas are stopped and incoherent with their leases
 * run out: a new commit waits on nobody, and only durable_lsns (a majority of
 * 5: two replicas) holds it, until rep_timeout_ms (then set to `repTimeoutMs`).
 */
async function majorityGone(prefix: string, repTimeoutMs: number): Promise<string> {
  const c = freshCluster(prefix);
  expect((await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status).toBe(
    200,
  );
  const tuned = await patchTunables(c, {
    debug_fault_injection: true,
    durable_lsns: true,
    rep_timeout_ms: 300,
    coherency_lease_ms: 100,
    heartbeat_ms: 50,
  });
  expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
  for (const id of REPLICAS) expect((await stop(c, id)).status).toBe(200);
  // The deadline marks every replica incoherent; once their leases are out the
  // commit waits on nobody and is answered NOT_DURABLE.
  const first = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('w0')" }], `${c}-w0`);
  expect(first.status, JSON.stringify(first.body)).toBe(503);
  expect(first.body).toMatchObject({ error: { code: "NOT_DURABLE" } });
  const replicas = (await status(c)).body.replicas;
  expect(replicas.filter((r) => REPLICAS.includes(r.id)).map((r) => r.state)).toEqual(
    Array(4).fill("incoherent"),
  );
  await new Promise((r) => setTimeout(r, 250));
  const longer = await patchTunables(c, { rep_timeout_ms: repTimeoutMs });
  expect(longer.status, JSON.stringify(longer.body)).toBe(200);
  return c;
}

async function outstanding(c: string): Promise<number> {
  return (await status(c)).body.master.waiter.outstanding;
}

describe("attack 18b: durable_lsns turned off while a commit waits for a majority", () => {
  it("the next commit's arrival answers the waiting commit, as a full pass at every commit did", async () => {
    const c = await majorityGone("a18b-dsw", 8_000);
    const w1 = timed(exec(c, [{ sql: "INSERT INTO t (v) VALUES ('w1')" }], `${c}-w1`));
    await waitUntil("w1 waits in the waiter", async () => (await outstanding(c)) === 1, 5_000, 20);
    expect((await patchTunables(c, { durable_lsns: false })).status).toBe(200);
    // w2 waits on nobody and needs no majority any more: answered at once.
    const w2 = await timed(exec(c, [{ sql: "INSERT INTO t (v) VALUES ('w2')" }], `${c}-w2`));
    expect(w2.status, JSON.stringify(w2.body)).toBe(200);
    // A full pass at w2's arrival answers w1 too (nothing holds it any more).
    const settled = await Promise.race([
      w1,
      new Promise<null>((r) => setTimeout(() => r(null), 2_000)),
    ]);
    const waiting = await outstanding(c);
    // Without the pass a PATCH asks for: w1 still waits for its 8 s deadline.
    expect(
      { w1AnsweredWithin2sOfW2: settled !== null, stillWaiting: waiting },
      "w1 was answered when w2 arrived with a full pass at every commit",
    ).toEqual({ w1AnsweredWithin2sOfW2: true, stillWaiting: 0 });
    const done = await w1;
    expect(done.status).toBe(200);
  }, 30_000);

  it("keeps the 200 a pass gave when durable_lsns is turned on again before the deadline", async () => {
    const c = await majorityGone("a18b-dsw2", 3_000);
    const w1 = timed(exec(c, [{ sql: "INSERT INTO t (v) VALUES ('w1')" }], `${c}-w1`));
    await waitUntil("w1 waits in the waiter", async () => (await outstanding(c)) === 1, 5_000, 20);
    expect((await patchTunables(c, { durable_lsns: false })).status).toBe(200);
    const w2 = await timed(exec(c, [{ sql: "INSERT INTO t (v) VALUES ('w2')" }], `${c}-w2`));
    expect(w2.status, JSON.stringify(w2.body)).toBe(200);
    // With a full pass at w2's arrival w1 was answered 200 by now; the operator
    // turns the majority rule back on.
    expect((await patchTunables(c, { durable_lsns: true })).status).toBe(200);
    const done = await w1;
    // Without the pass a PATCH asks for: 503 NOT_DURABLE at w1's deadline (3 s after it began).
    expect(
      { status: done.status, body: done.body },
      "w1's answer as a full pass at w2's arrival gave it",
    ).toMatchObject({ status: 200 });
  }, 30_000);
});
