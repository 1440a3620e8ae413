/**
 * Reproductions from an adversarial review of placement: location hints per
 * member, DEFAULT_LOCATIONS, hints on every stub that may create a member,
 * reads routed to the nearest coherent replica, and membership changes racing
 * each other and a handover. Each `it` is named for the behaviour promised.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MEMBER_ID } from "../core/members";
import { byNearness, callerRegion, LOCATION_HINTS, parseLocations } from "../core/placement";
import type { DirectoryRecord } from "../core/directory-record";
import { type ClusterDirectory, directoryStub } from "../durable-objects/directory";
import { seedDefaultTopology } from "../durable-objects/master/default-topology";
import { NodeStore } from "../durable-objects/node-store";
import failoverSource from "../durable-objects/failover.ts?raw";
import { app } from "../workers/app";
import {
  ADMIN,
  call,
  exec,
  freshCluster,
  patchTunables,
  status,
  waitUntil,
  addReplicaRetrying,
} from "./helpers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const isMember = (id: string) => MEMBER_ID.test(id);

interface PlacedStatus {
  master: { id: string; term: number; lsn: number; location: string | null };
  replicas: { id: string; state: string; ackedLsn: number; location: string | null }[];
}
const statusOf = async (c: string) => (await status(c)).body as unknown as PlacedStatus;
const locationsOf = (s: PlacedStatus) =>
  Object.fromEntries(s.replicas.map((r) => [r.id, r.location]));

async function allCoherent(c: string, count?: number): Promise<void> {
  await waitUntil("every replica coherent", async () => {
    const s = await statusOf(c);
    return (
      (count === undefined || s.replicas.length === count) &&
      s.replicas.every((r) => r.state === "coherent" && r.ackedLsn === s.master.lsn)
    );
  });
}

/** A cluster of node-0 and replica-1 … replica-4 (no hints) plus replica-5 (weur). */
async function hintedCluster(prefix: string): Promise<string> {
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
  expect((await addReplicaRetrying(c, "weur")).body).toMatchObject({
    id: "replica-5",
    location: "weur",
  });
  await allCoherent(c, 5);
  return c;
}

/** Holds every call to the cluster's directory for `ms` (the window of an admin change). */
function holdDirectory(c: string, ms: number): Promise<void> {
  const ns = env.DIRECTORY as unknown as DurableObjectNamespace<ClusterDirectory>;
  return runInDurableObject(ns.get(ns.idFromName(c)), (_i, state) => {
    state.blockConcurrencyWhile(() => sleep(ms)).catch(() => {});
  }).catch(() => {});
}

/** The front door on an env whose NODE namespace records each stub's options. */
function recordingFrontDoor() {
  const real = env.NODE as unknown as DurableObjectNamespace;
  const names = new Map<string, string>();
  const gets: { route: string; name: string; hint: string | undefined }[] = [];
  let route = "";
  const NODE = {
    idFromName(name: string) {
      const id = real.idFromName(name);
      names.set(id.toString(), name);
      return id;
    },
    get(id: DurableObjectId, options?: DurableObjectNamespaceGetDurableObjectOptions) {
      gets.push({ route, name: names.get(id.toString()) ?? "?", hint: options?.locationHint });
      return real.get(id, options);
    },
  };
  const recorded = { ...env, NODE } as unknown as Env;
  const ctx = {
    waitUntil() {},
    passThroughOnException() {},
    props: {},
  } as unknown as ExecutionContext;
  const fetch = async (method: string, path: string, body?: unknown) => {
    route = `${method} ${path.split("/").slice(4).join("/")}`;
    const response = await app.fetch(
      new Request(`http://cluster.test${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
      recorded,
      ctx,
    );
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  return { gets, fetch };
}

describe("placement under attack", () => {
  // ------------------------------------------------------------ DEFAULT_LOCATIONS

  it("DEFAULT_LOCATIONS refuses entries that name no member (replica-0, replica-01) and conflicting duplicates", () => {
    const accepted: string[] = [];
    for (const bad of [
      "replica-0=weur", // replicas are numbered from 1
      "replica-01=weur", // replicaId(1) is replica-1: this id never exists
      "replica-0001=weur",
      "node-0=enam,node-0=weur", // which one?
      "directory=weur,directory=enam",
    ]) {
      try {
        accepted.push(`${bad} -> ${JSON.stringify(parseLocations(bad, isMember))}`);
      } catch {
        // refused: as promised
      }
    }
    expect(accepted).toEqual([]);
  });

  it("a replica added with no body has no hint, even when DEFAULT_LOCATIONS named its id beyond DEFAULT_REPLICAS", async () => {
    const c = freshCluster("atk-future");
    // The first master seeds the default topology from the vars; seeded here with
    // DEFAULT_REPLICAS=2 and a DEFAULT_LOCATIONS that parseLocations accepts.
    const ns = env.NODE as unknown as DurableObjectNamespace;
    await runInDurableObject(ns.get(ns.idFromName(`${c}:node-0`)), (_i, state) => {
      const vars = { DEFAULT_REPLICAS: "2", DEFAULT_LOCATIONS: "replica-3=apac" } as unknown as Env;
      seedDefaultTopology(vars, state.storage, new NodeStore(state.storage.kv), 0);
    });
    const before = await statusOf(c);
    expect(before.replicas.map((r) => r.id)).toEqual(["replica-1", "replica-2"]);
    const added = await addReplicaRetrying(c); // no body: "adds a replica without a hint, as before placement"
    expect(added.status).toBe(201);
    expect(added.body.id).toBe("replica-3");
    const after = await statusOf(c);
    console.log(
      "added without a body:",
      JSON.stringify(added.body),
      JSON.stringify(locationsOf(after)),
    );
    await allCoherent(c, 3);
    expect(added.body.location).toBeNull();
    expect(locationsOf(after)["replica-3"]).toBeNull();
  });

  it("a malformed DEFAULT_LOCATIONS is answered as a configuration error that names it, not a 503 to retry", async () => {
    const { fetch } = (() => {
      const broken = { ...env, DEFAULT_LOCATIONS: "node-0=mars" } as unknown as Env;
      const ctx = {
        waitUntil() {},
        passThroughOnException() {},
        props: {},
      } as unknown as ExecutionContext;
      return {
        fetch: async (path: string) => {
          const response = await app.fetch(
            new Request(`http://cluster.test${path}`, {
              headers: { authorization: `Bearer ${ADMIN}` },
            }),
            broken,
            ctx,
          );
          return {
            status: response.status,
            retryAfter: response.headers.get("retry-after"),
            text: await response.text(),
          };
        },
      };
    })();
    const answer = await fetch(`/admin/clusters/${freshCluster("atk-badvar")}/status`);
    console.log("malformed DEFAULT_LOCATIONS:", JSON.stringify(answer));
    expect(answer.text).toMatch(/DEFAULT_LOCATIONS/);
    expect(answer.status).not.toBe(503);
    expect(answer.retryAfter).toBeNull();
  });

  // ------------------------------------------------------------ request.cf

  it("the caller's region is a location hint or null whatever request.cf.continent holds", () => {
    for (const continent of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      const region = callerRegion({ continent });
      expect(
        region === null || LOCATION_HINTS.includes(region),
        `${continent}: ${String(region)}`,
      ).toBe(true);
    }
  });

  it("a read whose request.cf.continent is a prototype key is still served", async () => {
    const c = await hintedCluster("atk-continent");
    const read = await call("POST", `/v1/clusters/${c}/query`, {
      body: { sql: "SELECT count(*) AS n FROM t" },
      cf: { continent: "constructor" },
    });
    console.log("cf.continent constructor:", read.status, JSON.stringify(read.body));
    expect(read.status).toBe(200);
  });

  it("coordinates the platform did not give (null, empty, non-numeric types) fall back to the continent", () => {
    const wrong: string[] = [];
    for (const point of [
      { latitude: null, longitude: null },
      { latitude: "", longitude: "" },
      { latitude: [], longitude: [] },
      { latitude: true, longitude: false },
    ]) {
      const region = callerRegion({ ...point, continent: "EU" });
      if (region !== "weur") wrong.push(`${JSON.stringify(point)} -> ${region}`);
    }
    expect(wrong).toEqual([]);
    // And the order that follows: a European caller with a null point is sent to
    // Johannesburg before Frankfurt.
    const members = [
      { id: "fra", location: "weur" as const },
      { id: "jnb", location: "afr" as const },
    ];
    expect(
      byNearness(callerRegion({ latitude: null, longitude: null, continent: "EU" }), members)[0]
        ?.id,
    ).toBe("fra");
  });

  it("a caller is mapped to the region nearest its colo (North Africa, Cairo, Pakistan, India, Panama)", () => {
    // Airport coordinates; the region nearest each by the module's own reference
    // cities (callerRegion's coordinate fallback) against the COLO_REGIONS table.
    const colos: Record<string, [number, number]> = {
      ALG: [36.69, 3.22],
      TUN: [36.85, 10.23],
      CMN: [33.37, -7.59],
      CAI: [30.12, 31.41],
      KHI: [24.91, 67.16],
      BOM: [19.09, 72.87],
      PTY: [9.07, -79.38],
    };
    const wrong: string[] = [];
    for (const [colo, [latitude, longitude]] of Object.entries(colos)) {
      const table = callerRegion({ colo });
      const nearest = callerRegion({ latitude: String(latitude), longitude: String(longitude) });
      if (table !== nearest && table !== null && nearest !== null) {
        wrong.push(`${colo} -> ${table}, nearest ${nearest}`);
      }
    }
    console.log("colos sent past a nearer region:", wrong);
    expect(wrong).toEqual([]);
  });

  // ------------------------------------------------------------ hints on every stub

  it("every stub the front door makes for a member carries its hint (promote, partition, restore)", async () => {
    const c = await hintedCluster("atk-stubs");
    const door = recordingFrontDoor();
    const partitioned = await door.fetch(
      "POST",
      `/admin/clusters/${c}/members/replica-5/partition`,
      {
        partitioned: false,
      },
    );
    expect(partitioned.status, JSON.stringify(partitioned.body)).toBe(200);
    const restored = await door.fetch("POST", `/admin/clusters/${c}/members/replica-5/restore`);
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    const promoted = await door.fetch("POST", `/admin/clusters/${c}/promote`, {
      replica: "replica-5",
    });
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
    const toReplica5 = door.gets.filter((g) => g.name === `${c}:replica-5`);
    console.log(
      "stubs made for replica-5 (weur):",
      JSON.stringify(toReplica5.map((g) => g.hint ?? null)),
    );
    expect(toReplica5.length).toBeGreaterThan(0);
    expect(
      toReplica5.filter((g) => g.hint !== "weur").map((g) => `${g.route}: ${g.hint ?? "no hint"}`),
    ).toEqual([]);
  });

  it("the stubs a promotion makes for members carry their hints (the watchdog's pre-vote, the fence, the takeover)", () => {
    // A replica's own calls go only to a master that has called it (it
    // exists): those need no hint. A promotion may reach a member that was
    // published in the directory but never created yet.
    const hintless = (source: string, file: string) =>
      [...source.matchAll(/nodeStub\(([^()]*)\)/g)]
        .filter((m) => (m[1] ?? "").split(",").length < 4)
        .map((m) => `${file}: nodeStub(${m[1]})`);
    const found = hintless(failoverSource as string, "failover.ts");
    expect(found).toEqual([]);
    expect(failoverSource).toMatch(/nodeStub\(env, cluster, id, config\.locations\?\.\[id\]\)/);
  });

  // ------------------------------------------------------------ races on the membership

  it("two concurrent adds with different hints get two ids, each keeping the hint it was answered with", async () => {
    const c = await hintedCluster("atk-add-add");
    const held = holdDirectory(c, 1500);
    await sleep(20);
    const [a, b] = await Promise.all([
      call<{ id: string; location: string }>("POST", `/admin/clusters/${c}/replicas`, {
        body: { location: "apac" },
      }),
      (async () => {
        await sleep(100);
        return call<{ id: string; location: string }>("POST", `/admin/clusters/${c}/replicas`, {
          body: { location: "oc" },
        });
      })(),
    ]);
    await held;
    console.log(
      "concurrent adds:",
      a.status,
      JSON.stringify(a.body),
      b.status,
      JSON.stringify(b.body),
    );
    const s = await statusOf(c);
    console.log("after:", JSON.stringify(locationsOf(s)));
    await waitUntil("bootstraps settle", async () =>
      (await statusOf(c)).replicas.every((r) => r.state === "coherent"),
    ).catch(() => {});
    for (const added of [a, b]) {
      if (added.status !== 201) continue;
      expect(locationsOf(s)[added.body.id], `${added.body.id}`).toBe(added.body.location);
    }
    if (a.status === 201 && b.status === 201) expect(a.body.id).not.toBe(b.body.id);
  });

  it("an add and a removal in flight together both hold: the added replica keeps its hint and its place in the directory", async () => {
    const c = await hintedCluster("atk-add-remove");
    const held = holdDirectory(c, 1500);
    await sleep(20);
    const [added, removed] = await Promise.all([
      call<{ id: string }>("POST", `/admin/clusters/${c}/replicas`, { body: { location: "apac" } }),
      (async () => {
        await sleep(100);
        return call("DELETE", `/admin/clusters/${c}/replicas/replica-5`);
      })(),
    ]);
    await held;
    console.log("add:", added.status, JSON.stringify(added.body), "remove:", removed.status);
    expect(added.status).toBe(201);
    expect(removed.status).toBe(200);
    const s = await statusOf(c);
    const record = (await directoryStub(env, c).read()) as DirectoryRecord;
    console.log(
      "after: status",
      JSON.stringify(locationsOf(s)),
      "directory replicas",
      JSON.stringify(record.config?.replicas),
      "directory locations",
      JSON.stringify(record.config?.locations),
    );
    await waitUntil("bootstraps settle", async () =>
      (await statusOf(c)).replicas.every((r) => r.state === "coherent"),
    ).catch(() => {});
    const id = added.body.id;
    expect(Object.keys(locationsOf(s))).not.toContain("replica-5");
    expect(locationsOf(s)[id]).toBe("apac");
    expect(record.config?.replicas).toContain(id);
    expect(record.config?.locations?.[id]).toBe("apac");
  });

  it("a replica added with a hint just before a handover is a member of the new master, with its hint", async () => {
    const c = await hintedCluster("atk-add-promote");
    const held = holdDirectory(c, 1500);
    await sleep(20);
    const [added, promoted] = await Promise.all([
      call<{ id: string }>("POST", `/admin/clusters/${c}/replicas`, { body: { location: "apac" } }),
      (async () => {
        await sleep(100);
        return call<{ master: string }>("POST", `/admin/clusters/${c}/promote`, {
          body: { replica: "replica-5" },
        });
      })(),
    ]);
    await held;
    console.log(
      "add:",
      added.status,
      JSON.stringify(added.body),
      "promote:",
      promoted.status,
      JSON.stringify(promoted.body),
    );
    const s = await statusOf(c);
    console.log("after: master", s.master.id, JSON.stringify(locationsOf(s)));
    await waitUntil("bootstraps settle", async () =>
      (await statusOf(c)).replicas.every((r) => r.state === "coherent"),
    ).catch(() => {});
    const again = await addReplicaRetrying(c);
    console.log("the next add on the new master:", again.status, JSON.stringify(again.body));
    await waitUntil("bootstraps settle", async () =>
      (await statusOf(c)).replicas.every((r) => r.state === "coherent"),
    ).catch(() => {});
    expect(added.status).toBe(201);
    expect(promoted.status).toBe(200);
    expect(locationsOf(s)[added.body.id]).toBe("apac");
  });
});
