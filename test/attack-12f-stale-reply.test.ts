/**
 * Promise attacked: a replica that computes anything other than the master
 * reports `diverged` and is rebuilt (once), whatever the relay settings
 * (debug_link_delay_ms, several calls in flight); a replica that has been
 * rebuilt and computes what the master does is not reported diverged again.
 *
 * What breaks: RelayLink.onResponse acts on `response.diverged` and
 * `response.rebuilding` from a reply of any generation, gated only by
 * `!this.snapshotting`. Over a slow link, the replies to the calls that were
 * out when the replica diverged come back after the (fast, undelayed)
 * snapshot has been installed: each stale "diverged" reply counts another
 * divergence, marks the freshly rebuilt replica incoherent ("diverged") and
 * streams it a whole new snapshot, and replies that reached it while it was
 * being rebuilt ("rebuilding") do the same.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ADMIN, call, exec, freshCluster, patchTunables, status, waitUntil } from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface ReplicaRow {
  id: string;
  state: string;
  incoherentReason: string | null;
  rebuilding: boolean;
  snapshots: number;
}

const replicaRow = async (c: string, id: string) =>
  ((await status(c)).body.replicas as unknown as ReplicaRow[]).find((r) => r.id === id);

async function divergences(c: string, id: string): Promise<number> {
  const res = await exports.default.fetch(
    new Request(`http://cluster.test/metrics?cluster=${c}`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    }),
  );
  const text = await res.text();
  const line = text
    .split("\n")
    .find((l) => l.startsWith("dosql_divergences_total") && l.includes(`replica="${id}"`));
  return line === undefined ? 0 : Number(line.split(" ").pop());
}

describe("attack 12f: stale replies after a rebuild over a slow link", () => {
  it("one divergence is counted and rebuilt once; the rebuilt replica is not marked diverged again", async () => {
    const c = freshCluster("a12f-stale");
    const ddl = await exec(c, [
      { sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" },
      { sql: "INSERT INTO t (v) VALUES ('a'), ('b'), ('c')" },
    ]);
    expect(ddl.status).toBe(200);
    const tuned = await patchTunables(c, {
      debug_fault_injection: true,
      debug_link_delay_ms: 2000,
      relay_calls_in_flight: 8,
      relay_window: 16,
      rep_timeout_ms: 20_000,
      commit_timeout_ms: 20_000,
    });
    expect(tuned.status, JSON.stringify(tuned.body)).toBe(200);
    await sleep(2500);
    const tamper = await call("POST", `/admin/clusters/${c}/replicas/replica-1/tamper`, {
      body: { sql: "DELETE FROM t WHERE id = 2" },
    });
    expect(tamper.status, JSON.stringify(tamper.body)).toBe(200);
    // The first write diverges replica-1; the ones after it are on the link
    // behind it, each its own call, and reach replica-1 while it is diverged.
    const writes: Promise<unknown>[] = [exec(c, [{ sql: "UPDATE t SET v = 'B' WHERE id = 2" }])];
    for (let i = 0; i < 6; i++) {
      await sleep(100);
      writes.push(exec(c, [{ sql: "INSERT INTO t (v) VALUES (?)", params: [`w${i}`] }]));
    }
    await Promise.all(writes);
    await waitUntil(
      "replica-1 rebuilt",
      async () => ((await replicaRow(c, "replica-1"))?.snapshots ?? 0) > 0,
      20_000,
      20,
    );
    // Every reply still on the link comes back within a round trip or two; a
    // rebuilt replica then rejoins (penalty 200 ms) and stays coherent.
    const seen: string[] = [];
    for (let i = 0; i < 30; i++) {
      await sleep(500);
      const r = await replicaRow(c, "replica-1");
      seen.push(`${r?.state}/${r?.incoherentReason}/${r?.snapshots}`);
    }
    const row = await replicaRow(c, "replica-1");
    const count = await divergences(c, "replica-1");
    expect(
      { snapshots: row?.snapshots, divergences: count },
      `replica-1 after one divergence (state/reason/snapshots every 500 ms: ${seen.join(" ")})`,
    ).toEqual({ snapshots: 1, divergences: 1 });
    expect(row?.state).toBe("coherent");
  }, 60_000);
});
