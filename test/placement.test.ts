/**
 * Placement's rules (core/placement.ts): the caller's region from request.cf,
 * replicas ordered by nearness, the DEFAULT_LOCATIONS var, stored hints, and
 * the hint reaching the platform when a stub is made.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MEMBER_ID } from "../core/members";
import {
  byNearness,
  COLO_REGIONS,
  callerRegion,
  LOCATION_HINTS,
  type LocationHint,
  locationsFromStored,
  parseLocations,
  regionKm,
} from "../core/placement";
import { seedDefaultTopology } from "../durable-objects/master/default-topology";
import { nodeStub } from "../durable-objects/node-rpc";
import { NodeStore } from "../durable-objects/node-store";
import { defaultLocations } from "../durable-objects/placement-env";

const isMember = (id: string) => MEMBER_ID.test(id);

describe("the caller's region", () => {
  it("comes from the colo through the documented mapping", () => {
    expect(callerRegion({ colo: "LHR" })).toBe("weur");
    expect(callerRegion({ colo: "SIN" })).toBe("apac");
    expect(callerRegion({ colo: "DFW" })).toBe("enam");
    expect(callerRegion({ colo: "SJC" })).toBe("wnam");
    expect(callerRegion({ colo: "GRU" })).toBe("sam");
    expect(callerRegion({ colo: "WAW" })).toBe("eeur");
    expect(callerRegion({ colo: "SYD" })).toBe("oc");
    expect(callerRegion({ colo: "JNB" })).toBe("afr");
    expect(callerRegion({ colo: "DXB" })).toBe("me");
    expect(callerRegion({ colo: "lhr" })).toBe("weur");
  });

  it("falls back to the caller's coordinates, then its continent, then nothing", () => {
    // An unlisted colo with coordinates near Tokyo, near Lisbon, near Nairobi.
    expect(callerRegion({ colo: "ZZZ", latitude: "35.7", longitude: "139.7" })).toBe("apac");
    expect(callerRegion({ colo: "ZZZ", latitude: "38.7", longitude: "-9.1" })).toBe("weur");
    expect(callerRegion({ latitude: "-1.3", longitude: "36.8" })).toBe("afr");
    expect(
      callerRegion({ colo: "ZZZ", latitude: "nowhere", longitude: "1", continent: "SA" }),
    ).toBe("sam");
    expect(callerRegion({ continent: "AN" })).toBeNull();
    expect(callerRegion({})).toBeNull();
    expect(callerRegion(undefined)).toBeNull();
    expect(callerRegion("LHR")).toBeNull();
  });

  it("maps every listed colo to a hint the platform knows, and every hint has colos", () => {
    expect(COLO_REGIONS.size).toBeGreaterThan(150);
    for (const [colo, hint] of COLO_REGIONS) {
      expect(colo).toMatch(/^[A-Z]{3}$/);
      expect(LOCATION_HINTS).toContain(hint);
    }
    for (const hint of LOCATION_HINTS) {
      expect([...COLO_REGIONS.values()]).toContain(hint);
    }
  });
});

describe("replicas by nearness", () => {
  const members: { id: string; location: LocationHint | null }[] = [
    { id: "replica-1", location: null },
    { id: "replica-2", location: "apac" },
    { id: "replica-3", location: "eeur" },
    { id: "replica-4", location: "weur" },
    { id: "replica-5", location: "wnam" },
  ];

  it("puts the caller's region first, then the nearer ones, then members without a hint", () => {
    expect(byNearness("weur", members).map((m) => m.id)).toEqual([
      "replica-4",
      "replica-3",
      "replica-5",
      "replica-2",
      "replica-1",
    ]);
    expect(byNearness("apac", members)[0]?.id).toBe("replica-2");
    // Ashburn is nearer San Jose (about 3,900 km) than Frankfurt (about 6,500 km).
    expect(byNearness("enam", members)[0]?.id).toBe("replica-5");
    expect(regionKm("enam", "wnam")).toBeGreaterThan(3_500);
    expect(regionKm("enam", "wnam")).toBeLessThan(4_200);
    expect(regionKm("enam", "weur")).toBeGreaterThan(6_000);
    expect(regionKm("enam", "weur")).toBeLessThan(6_900);
  });

  it("shares ties at random, and every member ties without a caller region", () => {
    const twins = [
      { id: "a", location: "weur" as const },
      { id: "b", location: "weur" as const },
    ];
    const firsts = new Set<string>();
    for (let i = 0; i < 200; i++) firsts.add(byNearness("weur", twins)[0]?.id ?? "");
    expect(firsts).toEqual(new Set(["a", "b"]));
    const seen = new Set<string>();
    for (let i = 0; i < 400; i++) seen.add(byNearness(null, members)[0]?.id ?? "");
    expect(seen.size).toBe(members.length);
    // Without hints at all, a known caller region changes nothing either.
    const plain = members.map((m) => ({ ...m, location: null }));
    const plainFirsts = new Set<string>();
    for (let i = 0; i < 400; i++) plainFirsts.add(byNearness("weur", plain)[0]?.id ?? "");
    expect(plainFirsts.size).toBe(members.length);
  });

  it("answers nothing for no members, and keeps every member once", () => {
    expect(byNearness("weur", [])).toEqual([]);
    const ordered = byNearness("oc", members);
    expect(new Set(ordered.map((m) => m.id)).size).toBe(members.length);
  });
});

describe("the DEFAULT_LOCATIONS var", () => {
  it("names members (and the directory) with hints", () => {
    expect(parseLocations("", isMember)).toEqual({});
    expect(parseLocations(undefined, isMember)).toEqual({});
    expect(parseLocations(" node-0=enam, replica-2 = weur ,directory=wnam,", isMember)).toEqual({
      "node-0": "enam",
      "replica-2": "weur",
      directory: "wnam",
    });
  });

  it("refuses a bad entry plainly instead of ignoring it", () => {
    for (const bad of ["node-0=mars", "replica-x=enam", "enam", "node-0=enam=weur", "=enam"]) {
      expect(() => parseLocations(bad, isMember)).toThrow(/DEFAULT_LOCATIONS entry/);
    }
  });

  it("is read from the environment", () => {
    const env = { DEFAULT_LOCATIONS: "replica-1=oc" } as unknown as Env;
    expect(defaultLocations(env)).toEqual({ "replica-1": "oc" });
    expect(defaultLocations({ DEFAULT_LOCATIONS: "" } as unknown as Env)).toEqual({});
  });
});

describe("stored hints", () => {
  it("keep only valid hints", () => {
    expect(locationsFromStored(null)).toEqual({});
    expect(locationsFromStored("")).toEqual({});
    expect(locationsFromStored('{"replica-1":"weur","replica-2":"moon","replica-3":7}')).toEqual({
      "replica-1": "weur",
    });
    expect(locationsFromStored("[1]")).toEqual({});
  });
});

describe("a member's stub", () => {
  it("carries its hint to the platform, and none when it has none", () => {
    const gets: unknown[] = [];
    const ns = {
      idFromName: (name: string) => ({ name }),
      get: (id: unknown, options?: unknown) => {
        gets.push(options);
        return { id };
      },
    };
    const env = { NODE: ns } as unknown as Env;
    nodeStub(env, "c", "replica-1", "weur");
    nodeStub(env, "c", "replica-2", null);
    nodeStub(env, "c", "replica-3");
    expect(gets).toEqual([{ locationHint: "weur" }, undefined, undefined]);
  });
});

describe("the default topology", () => {
  it("is seeded once with DEFAULT_LOCATIONS' hints, and never over a membership that exists", async () => {
    const ns = env.NODE as unknown as DurableObjectNamespace;
    const stub = ns.get(ns.idFromName(`seed-${Math.random()}:node-0`));
    const seeded = await runInDurableObject(stub, (_, state) => {
      const store = new NodeStore(state.storage.kv);
      const topology = {
        DEFAULT_REPLICAS: "2",
        DEFAULT_LOCATIONS: "node-0=enam,replica-2=oc,directory=weur",
      } as unknown as Env;
      seedDefaultTopology(topology, state.storage, store, 0);
      const first = {
        replicas: [...store.loadReplicaStates().keys()],
        locations: locationsFromStored(store.getMeta("locations")),
        next: store.getMeta("next_replica"),
      };
      // A second start (or another topology in the var since) changes nothing.
      seedDefaultTopology(
        { DEFAULT_REPLICAS: "5", DEFAULT_LOCATIONS: "" } as unknown as Env,
        state.storage,
        store,
        0,
      );
      return {
        first,
        again: [...store.loadReplicaStates().keys()],
        next: store.getMeta("next_replica"),
      };
    });
    expect(seeded.first).toEqual({
      replicas: ["replica-1", "replica-2"],
      locations: { "node-0": "enam", "replica-2": "oc", directory: "weur" },
      next: "3",
    });
    expect(seeded.again).toEqual(["replica-1", "replica-2"]);
    expect(seeded.next).toBe("3");
  });
});
