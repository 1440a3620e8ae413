/**
 * Placement end to end: a replica added with a location hint keeps it in the
 * membership (status, the replica list, the directory, across promotions), and
 * the front door sends reads to the coherent replica nearest the caller's
 * colo (request.cf), falling back to another coherent one.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { DirectoryRecord } from "../core/directory-record";
import { directoryStub } from "../durable-objects/directory";
import {
  call,
  exec,
  freshCluster,
  patchTunables,
  query,
  status,
  waitUntil,
  addReplicaRetrying,
} from "./helpers";

interface PlacedStatus {
  master: { id: string; term: number; lsn: number; location: string | null };
  replicas: { id: string; state: string; ackedLsn: number; location: string | null }[];
}

const statusOf = async (c: string) => (await status(c)).body as unknown as PlacedStatus;

async function coherentAt(c: string, count: number): Promise<void> {
  await waitUntil(`${count} replicas coherent`, async () => {
    const s = await statusOf(c);
    return (
      s.replicas.length === count &&
      s.replicas.every((r) => r.state === "coherent" && r.ackedLsn === s.master.lsn)
    );
  });
}

/** A cluster of node-0 and replica-5 (weur), replica-6 (apac), replica-7 (no hint). */
async function placedCluster(prefix: string): Promise<string> {
  const c = freshCluster(prefix);
  expect((await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status).toBe(
    200,
  );
  const tuned = await patchTunables(c, {
    debug_fault_injection: true,
    heartbeat_ms: 50,
    coherency_rejoin_penalty_ms: 0,
  });
  expect(tuned.status).toBe(200);
  for (const id of ["replica-1", "replica-2", "replica-3", "replica-4"]) {
    const removed = await call("DELETE", `/admin/clusters/${c}/replicas/${id}`);
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
  }
  expect((await addReplicaRetrying(c, "weur")).body).toMatchObject({
    id: "replica-5",
    location: "weur",
  });
  expect((await addReplicaRetrying(c, "apac")).body).toMatchObject({
    id: "replica-6",
    location: "apac",
  });
  expect((await addReplicaRetrying(c)).body).toMatchObject({ id: "replica-7", location: null });
  await coherentAt(c, 3);
  return c;
}

/**
 * Who serves a read from `colo`. A strong read needs the chosen replica to
 * hold a lease (else the master serves it); a read of consistency `any` shows
 * the choice alone.
 */
async function servedFrom(
  c: string,
  colo: string | undefined,
  consistency: "strong" | "any" = "strong",
): Promise<string> {
  const read = await query(c, "SELECT count(*) AS n FROM t", { consistency }, colo);
  expect(read.status, JSON.stringify(read.body)).toBe(200);
  return read.body.servedBy;
}

describe("placement", () => {
  it("records each replica's hint and refuses a hint the platform does not know", async () => {
    const c = await placedCluster("place-record");
    const s = await statusOf(c);
    expect(Object.fromEntries(s.replicas.map((r) => [r.id, r.location]))).toEqual({
      "replica-5": "weur",
      "replica-6": "apac",
      "replica-7": null,
    });
    expect(s.master.location).toBeNull();
    const list = await call("GET", `/admin/clusters/${c}/replicas`);
    expect(list.body).toEqual({
      replicas: ["replica-5", "replica-6", "replica-7"],
      locations: { "replica-5": "weur", "replica-6": "apac", "replica-7": null },
    });
    // The directory holds the hints too: a promotion without the master keeps them.
    const record = (await directoryStub(env, c).read()) as DirectoryRecord;
    expect(record.config?.locations).toEqual({ "replica-5": "weur", "replica-6": "apac" });
    for (const bad of [
      { location: "mars" },
      { location: 7 },
      { location: "WEUR" },
      { where: "weur" },
    ]) {
      const refused = await call("POST", `/admin/clusters/${c}/replicas`, { body: bad });
      expect(refused.status).toBe(400);
      expect(JSON.stringify(refused.body)).toMatch(
        /wnam, enam, sam, weur, eeur, apac, oc, afr, me|where/,
      );
    }
    expect((await statusOf(c)).replicas).toHaveLength(3);
    // A removed replica's hint goes with it.
    expect((await call("DELETE", `/admin/clusters/${c}/replicas/replica-6`)).status).toBe(200);
    const after = (await directoryStub(env, c).read()) as DirectoryRecord;
    expect(after.config?.locations).toEqual({ "replica-5": "weur" });
  });

  it("sends a read to the coherent replica nearest the caller's colo", async () => {
    const c = await placedCluster("place-route");
    await waitUntil(
      "replica-5 serves a strong London read",
      async () => (await servedFrom(c, "LHR")) === "replica-5",
    );
    await waitUntil(
      "replica-6 serves a strong Singapore read",
      async () => (await servedFrom(c, "SIN")) === "replica-6",
    );
    for (let i = 0; i < 10; i++) {
      expect(await servedFrom(c, "LHR", "any")).toBe("replica-5");
      expect(await servedFrom(c, "FRA", "any")).toBe("replica-5");
      expect(await servedFrom(c, "SIN", "any")).toBe("replica-6");
      expect(await servedFrom(c, "NRT", "any")).toBe("replica-6");
    }
    // A bookmark read and a stale read go to the nearest one as well.
    const write = await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('x')" }]);
    const bookmark = (write.body as { bookmark: string }).bookmark;
    const near = await query(c, "SELECT v FROM t", { consistency: "bookmark", bookmark }, "SIN");
    expect(near.body.servedBy).toBe("replica-6");
    expect((await query(c, "SELECT v FROM t", { consistency: "any" }, "LHR")).body.servedBy).toBe(
      "replica-5",
    );
  });

  it("falls back to another coherent replica when the nearest is not coherent, and spreads reads without a colo", async () => {
    const c = await placedCluster("place-fallback");
    await waitUntil(
      "replica-5 serves a London read",
      async () => (await servedFrom(c, "LHR")) === "replica-5",
    );
    expect((await call("POST", `/admin/clusters/${c}/replicas/replica-5/stop`)).status).toBe(200);
    const write = await exec(c, [
      { sql: "INSERT INTO t (v) VALUES ('while replica-5 is stopped')" },
    ]);
    const bookmark = (write.body as { bookmark: string }).bookmark;
    await waitUntil("replica-5 incoherent", async () =>
      (await statusOf(c)).replicas.some((r) => r.id === "replica-5" && r.state !== "coherent"),
    );
    // The next nearest coherent replica to London is the hinted one in Singapore;
    // the replica without a hint comes last. The front door's list is at most 2 s old.
    await waitUntil(
      "a London read leaves replica-5",
      async () => (await servedFrom(c, "LHR")) === "replica-6",
    );
    // A bookmark read needs no lease: it shows the choice alone.
    for (let i = 0; i < 5; i++) {
      const read = await query(c, "SELECT 1", { consistency: "bookmark", bookmark }, "LHR");
      expect(read.body.servedBy).toBe("replica-6");
    }
    const read = await query(c, "SELECT count(*) AS n FROM t", {}, "LHR");
    expect(read.body.rows).toEqual([{ n: 1 }]);
    // Without request.cf (locally) every coherent replica is as near as another.
    const seen = new Set<string>();
    for (let i = 0; i < 40; i++) seen.add(await servedFrom(c, undefined));
    expect(seen.has("replica-6") && seen.has("replica-7")).toBe(true);
    expect(seen.has("replica-5")).toBe(false);
  });

  it("keeps the hints across a promotion by handover and one without the master", async () => {
    const c = await placedCluster("place-promote");
    const handover = await call<{ master: string }>("POST", `/admin/clusters/${c}/promote`, {
      body: { replica: "replica-5" },
    });
    expect(handover.status, JSON.stringify(handover.body)).toBe(200);
    let s = await statusOf(c);
    expect(s.master).toMatchObject({ id: "replica-5", location: "weur" });
    expect(Object.fromEntries(s.replicas.map((r) => [r.id, r.location]))).toEqual({
      "node-0": null,
      "replica-6": "apac",
      "replica-7": null,
    });
    expect((await addReplicaRetrying(c, "oc")).body).toMatchObject({
      id: "replica-8",
      location: "oc",
    });
    await coherentAt(c, 4);
    expect((await call("POST", `/admin/clusters/${c}/master/lose`)).status).toBe(202);
    const lost = await call<{ master: string }>("POST", `/admin/clusters/${c}/promote`, {
      body: { replica: "replica-6" },
    });
    expect(lost.status, JSON.stringify(lost.body)).toBe(200);
    s = await statusOf(c);
    expect(s.master).toMatchObject({ id: "replica-6", location: "apac" });
    expect(Object.fromEntries(s.replicas.map((r) => [r.id, r.location]))).toMatchObject({
      "replica-5": "weur",
      "replica-8": "oc",
    });
  });
});
