/**
 * Promotion by handover (POST …/promote), end to end through the front door:
 * a new master in a new term, nothing acknowledged lost, retries answered by
 * the new master from the saved results the old one made, the old master back
 * as a replica that verify proves identical, and the refusals that keep one
 * master per term.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { AppendRequest } from "../core/protocol";
import { replicaSettings } from "../core/replica-settings";
import { defaultTunables } from "../core/tunables";
import { nodeStub } from "../durable-objects/node-rpc";
import { call, exec, freshCluster, query, status, verify, waitUntil } from "./helpers";

interface Status {
  master: { id: string; term: number; lsn: number };
  replicas: { id: string; state: string; ackedLsn: number; incoherentReason: string | null }[];
}

const statusOf = async (c: string) => (await status(c)).body as unknown as Status;
const promote = (c: string, body: Record<string, unknown> = {}) =>
  call<{ master: string; term: number }>("POST", `/admin/clusters/${c}/promote`, { body });

async function setup(prefix: string): Promise<string> {
  const c = freshCluster(prefix);
  const ddl = await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE)" }]);
  expect(ddl.status).toBe(200);
  return c;
}

async function allCoherentAt(c: string, members: number): Promise<void> {
  await waitUntil("every replica coherent at the master's LSN", async () => {
    const s = await statusOf(c);
    return (
      s.replicas.length === members &&
      s.replicas.every((r) => r.state === "coherent" && r.ackedLsn === s.master.lsn)
    );
  });
}

describe("promotion by handover, 4 replicas", () => {
  it("names a new master in a new term; the old one rejoins as a replica that verify proves identical", async () => {
    const c = await setup("promote");
    for (let i = 0; i < 10; i++) {
      expect(
        (await exec(c, [{ sql: "INSERT INTO t (k) VALUES (?)", params: [`a${i}`] }], `a${i}`))
          .status,
      ).toBe(200);
    }
    const before = await statusOf(c);
    expect(before.master).toMatchObject({ id: "node-0", term: 1 });
    const promoted = await promote(c);
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
    expect(promoted.body.term).toBe(2);
    expect(promoted.body.master).toMatch(/^replica-\d$/);
    const after = await statusOf(c);
    expect(after.master.id).toBe(promoted.body.master);
    expect(after.master.term).toBe(2);
    // The term's first record follows the old master's last one.
    expect(after.master.lsn).toBe(before.master.lsn + 1);
    expect(after.replicas.map((r) => r.id).sort()).toEqual(
      ["node-0", "replica-1", "replica-2", "replica-3", "replica-4"].filter(
        (id) => id !== promoted.body.master,
      ),
    );
    // Writes go on, and a retry of a commit the old master acknowledged is answered
    // by the new one from its saved result, without running again.
    const w = await exec(c, [{ sql: "INSERT INTO t (k) VALUES (?)", params: ["b0"] }], "b0");
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    const retry = await exec(c, [{ sql: "INSERT INTO t (k) VALUES (?)", params: ["a3"] }], "a3");
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body.replayed).toBe(true);
    await allCoherentAt(c, 4);
    const v = await verify(c);
    expect(v.body.mismatches).toEqual([]);
    expect(v.body.agree).toBe(true);
    const rows = await query(c, "SELECT k FROM t ORDER BY k", {
      replica: "node-0",
      consistency: "any",
    });
    expect(rows.status, JSON.stringify(rows.body)).toBe(200);
    expect(rows.body.rows.map((r) => r.k)).toEqual(
      [...Array.from({ length: 10 }, (_, i) => `a${i}`), "b0"].sort(),
    );
  });

  it("promotes the named replica, and back again, one term each", async () => {
    const c = await setup("promote-named");
    expect((await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('x')" }])).status).toBe(200);
    const first = await promote(c, { replica: "replica-3" });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toEqual({ master: "replica-3", term: 2 });
    expect((await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('y')" }])).status).toBe(200);
    await allCoherentAt(c, 4);
    const back = await promote(c, { replica: "node-0" });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body).toEqual({ master: "node-0", term: 3 });
    expect((await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('z')" }])).status).toBe(200);
    await allCoherentAt(c, 4);
    const read = await query(
      c,
      "SELECT group_concat(k, '') AS ks FROM (SELECT k FROM t ORDER BY k)",
    );
    expect(read.body.rows).toEqual([{ ks: "xyz" }]);
    expect((await verify(c)).body.agree).toBe(true);
  });

  it("refuses to promote an incoherent replica, and the term stays", async () => {
    const c = await setup("promote-incoherent");
    expect(
      (
        await call("PATCH", `/admin/clusters/${c}/tunables`, {
          body: { debug_fault_injection: true, rep_timeout_ms: 300 },
        })
      ).status,
    ).toBe(200);
    expect((await call("POST", `/admin/clusters/${c}/replicas/replica-2/stop`)).status).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('while-stopped')" }])).status).toBe(
      200,
    );
    await waitUntil("replica-2 incoherent", async () => {
      return (await statusOf(c)).replicas.find((r) => r.id === "replica-2")?.state !== "coherent";
    });
    const refused = await promote(c, { replica: "replica-2" });
    expect(refused.status).toBe(503);
    expect(JSON.stringify(refused.body)).toMatch(/acknowledged writes/);
    const missing = await promote(c, { replica: "replica-9" });
    expect(missing.status).toBe(404);
    const s = await statusOf(c);
    expect(s.master).toMatchObject({ id: "node-0", term: 1 });
    // Writes still go through the old master: a refused promotion froze nothing.
    expect((await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('after')" }])).status).toBe(200);
  });

  it("two promotions racing from one term: exactly one wins", async () => {
    const c = await setup("promote-race");
    expect((await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('x')" }])).status).toBe(200);
    const [a, b] = await Promise.all([
      promote(c, { replica: "replica-1" }),
      promote(c, { replica: "replica-2" }),
    ]);
    const won = [a, b].filter((r) => r.status === 200);
    expect(won.length, JSON.stringify([a.body, b.body])).toBe(1);
    expect(won[0]?.body.term).toBe(2);
    const lost = [a, b].find((r) => r.status !== 200);
    expect(lost?.status).toBe(503);
    expect((await statusOf(c)).master).toMatchObject({ id: won[0]?.body.master, term: 2 });
    expect((await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('y')" }])).status).toBe(200);
  });

  it("a replica that knows the new term refuses the old master's records, and the old master refuses writes", async () => {
    const c = await setup("promote-fence");
    expect((await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('x')" }])).status).toBe(200);
    const promoted = await promote(c, { replica: "replica-1" });
    expect(promoted.status).toBe(200);
    await allCoherentAt(c, 4);
    const s = await statusOf(c);
    // A late message of term 1, as a master that had not heard of term 2 would send it.
    const late: AppendRequest = {
      cluster: c,
      replicaId: "replica-2",
      from: "node-0",
      term: 1,
      termStartLsn: 1,
      sentAt: Date.now(),
      masterLsn: s.master.lsn + 1,
      leaseUntil: Date.now() + 10_000,
      commitPoint: s.master.lsn + 1,
      settings: replicaSettings(defaultTunables()),
      records: [{ lsn: s.master.lsn + 1, term: 1, ts: Date.now(), end: 0, entries: [] }],
      truncatedThrough: 0,
      pull: false,
      ackedLsn: 0,
    };
    const answer = await nodeStub(env, c, "replica-2").append(late);
    expect(answer.staleTerm).toBe(2);
    expect(answer.applied).toBe(0);
    // The old master is a replica now: a write sent to it directly is refused before it runs.
    const direct = nodeStub(env, c, "node-0") as unknown as { exec(r: unknown): Promise<unknown> };
    // Awaited plainly: an RPC promise is a proxy, and a matcher probing its
    // properties would send calls of its own.
    let refusal: unknown;
    try {
      await direct.exec({
        cluster: c,
        kind: "exec",
        statements: [{ sql: "INSERT INTO t (k) VALUES ('z')", params: [] }],
        format: "objects",
      });
    } catch (error) {
      refusal = error;
    }
    expect(String(refusal)).toMatch(/NOT_MASTER/);
    const count = await query(c, "SELECT count(*) AS n FROM t WHERE k = 'z'");
    expect(count.body.rows).toEqual([{ n: 0 }]);
  });
});
