/**
 * Review attacks on promotion that found NOTHING (kept as evidence): each
 * test states the promise it attacked and passes if the promise held.
 */
import { describe, expect, it } from "vitest";
import { call, exec, freshCluster, query, status, verify, waitUntil } from "./helpers";
import { addReplica } from "./node-images";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Status {
  master: { id: string; term: number; lsn: number };
  replicas: { id: string; state: string; ackedLsn: number }[];
}
const statusOf = async (c: string) => (await status(c)).body as unknown as Status;
const promote = (c: string, body: Record<string, unknown> = {}) =>
  call<{ master: string; term: number }>("POST", `/admin/clusters/${c}/promote`, { body });

async function allCoherent(c: string, n: number) {
  await waitUntil(
    "all coherent at the master's LSN",
    async () => {
      const s = await statusOf(c);
      return (
        s.replicas.length === n &&
        s.replicas.every((r) => r.state === "coherent" && r.ackedLsn === s.master.lsn)
      );
    },
    30_000,
  );
}

/** Writes `key` until it gets 200; returns every 200 answer it got for it (first + replays). */
async function writeUntilOk(c: string, key: string, deadline: number) {
  for (;;) {
    const r = await exec(c, [{ sql: "INSERT INTO t (k) VALUES (?)", params: [key] }], key);
    if (r.status === 200) return r.body as { lsn: number; replayed?: boolean };
    if (Date.now() > deadline) throw new Error(`${key}: ${r.status} ${JSON.stringify(r.body)}`);
    await sleep(20);
  }
}

describe("review: promotion attacks that held", () => {
  it("a replica built from a snapshot, promoted, answers retries of commits from before its snapshot", async () => {
    const c = freshCluster("zz-snap");
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE)" }])).status,
    ).toBe(200);
    const first: Record<string, number> = {};
    for (let i = 0; i < 8; i++)
      first[`s${i}`] = (await writeUntilOk(c, `s${i}`, Date.now() + 5000)).lsn;
    const added = await addReplica(c);
    await allCoherent(c, 5);
    const p = await promote(c, { replica: added });
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    for (const [key, lsn] of Object.entries(first)) {
      const r = await exec(c, [{ sql: "INSERT INTO t (k) VALUES (?)", params: [key] }], key);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({ lsn, replayed: true });
    }
    const n = await query(c, "SELECT count(*) AS n FROM t");
    expect(n.body.rows).toEqual([{ n: 8 }]);
  });

  it("keyed writers retrying through three quick promotions: every key once, same answer, verify agrees", async () => {
    const c = freshCluster("zz-churn");
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE)" }])).status,
    ).toBe(200);
    const deadline = Date.now() + 40_000;
    const answers = new Map<string, number>();
    let stop = false;
    const writers = Array.from({ length: 6 }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        const key = `w${w}-${i}`;
        const a = await writeUntilOk(c, key, deadline);
        answers.set(key, a.lsn);
      }
    });
    const promotions: { status: number; body: unknown }[] = [];
    for (const target of ["replica-2", "replica-3", "node-0"]) {
      await sleep(150);
      for (;;) {
        const r = await promote(c, { replica: target });
        promotions.push({ status: r.status, body: r.body });
        if (r.status === 200) break;
        if (Date.now() > deadline) throw new Error(JSON.stringify(promotions));
        await sleep(100);
      }
    }
    await sleep(200);
    stop = true;
    await Promise.all(writers);
    // Every acknowledged key replays with its first answer, exactly once in the table.
    for (const [key, lsn] of answers) {
      const r = await exec(c, [{ sql: "INSERT INTO t (k) VALUES (?)", params: [key] }], key);
      expect(r.status, `${key} ${JSON.stringify(r.body)}`).toBe(200);
      expect(r.body, key).toMatchObject({ lsn, replayed: true });
    }
    const rows = await query(c, "SELECT k, count(*) AS n FROM t GROUP BY k HAVING n > 1");
    expect(rows.body.rows).toEqual([]);
    const total = await query(c, "SELECT count(*) AS n FROM t");
    expect(total.body.rows).toEqual([{ n: answers.size }]);
    const s = await statusOf(c);
    expect(s.master).toMatchObject({ id: "node-0", term: 4 });
    await allCoherent(c, 4);
    const v = await verify(c);
    expect(v.body.mismatches).toEqual([]);
    expect(v.body.agree).toBe(true);
    console.log("keys", answers.size, "promotion attempts", promotions.length);
  });

  it("a stopped (still coherent) named candidate is refused and nothing changes", async () => {
    const c = freshCluster("zz-stopped");
    expect(
      (await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE)" }])).status,
    ).toBe(200);
    expect(
      (
        await call("PATCH", `/admin/clusters/${c}/tunables`, {
          body: { debug_fault_injection: true },
        })
      ).status,
    ).toBe(200);
    expect((await call("POST", `/admin/clusters/${c}/replicas/replica-1/stop`)).status).toBe(200);
    const r = await promote(c, { replica: "replica-1" });
    expect(r.status, JSON.stringify(r.body)).toBe(503);
    expect((await statusOf(c)).master).toMatchObject({ id: "node-0", term: 1 });
    expect((await exec(c, [{ sql: "INSERT INTO t (k) VALUES ('after')" }])).status).toBe(200);
  });
});
