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
      // The directory's hint places the directory; only members' hints are membership.
      locations: { "node-0": "enam", "replica-2": "oc" },
      next: "3",
    });
    expect(seeded.again).toEqual(["replica-1", "replica-2"]);
    expect(seeded.next).toBe("3");
  });
});

describe("the colo table", () => {
  it("sends each colo to the region nearest it, by the same reference points as the coordinates", () => {
    // Approximate airport coordinates of the colos near a border between regions.
    const borderline: Record<string, [number, number]> = {
      ALG: [36.7, 3.2],
      TUN: [36.85, 10.2],
      CMN: [33.4, -7.6],
      CAI: [30.1, 31.4],
      KHI: [24.9, 67.2],
      BOM: [19.1, 72.9],
      PTY: [9.1, -79.4],
      DEL: [28.6, 77.1],
      MAA: [13.0, 80.2],
      BLR: [13.2, 77.7],
      HYD: [17.2, 78.4],
      CCU: [22.6, 88.4],
      CMB: [7.2, 79.9],
      DAC: [23.8, 90.4],
      LHE: [31.5, 74.4],
      ISB: [33.6, 73.1],
      KTM: [27.7, 85.4],
      SJO: [10.0, -84.2],
      MDE: [6.2, -75.4],
      BOG: [4.7, -74.1],
      UIO: [-0.1, -78.4],
      LIM: [-12.0, -77.1],
      GYE: [-2.2, -79.9],
      CLO: [3.5, -76.4],
      SCL: [-33.4, -70.8],
      EZE: [-34.8, -58.5],
      MEX: [19.4, -99.1],
      QRO: [20.6, -100.2],
      MTY: [25.8, -100.1],
      GDL: [20.5, -103.3],
      DEN: [39.9, -104.7],
      DFW: [32.9, -97.0],
      IAH: [30.0, -95.3],
      AUS: [30.2, -97.7],
      SAT: [29.5, -98.5],
      OMA: [41.3, -95.9],
      MCI: [39.3, -94.7],
      MSP: [44.9, -93.2],
      ABQ: [35.0, -106.6],
      PHX: [33.4, -112.0],
      SLC: [40.8, -111.9],
      BOI: [43.6, -116.2],
      YYC: [51.1, -114.0],
      YEG: [53.3, -113.6],
      ANC: [61.2, -150.0],
      HNL: [21.3, -157.9],
      HEL: [60.3, 25.0],
      IST: [41.3, 28.7],
      SAW: [40.9, 29.3],
      VIE: [48.1, 16.6],
      ATH: [37.9, 23.9],
      KBP: [50.3, 30.9],
      RIX: [56.9, 23.97],
      TLL: [59.4, 24.8],
      VNO: [54.6, 25.3],
      BEG: [44.8, 20.3],
      ZAG: [45.7, 16.1],
      LJU: [46.2, 14.5],
      SKP: [42.0, 21.6],
      TIA: [41.4, 19.7],
      KIV: [46.9, 28.9],
      BTS: [48.2, 17.2],
      PRG: [50.1, 14.3],
      BUD: [47.4, 19.3],
      OTP: [44.6, 26.1],
      SOF: [42.7, 23.4],
      OSL: [60.2, 11.1],
      ARN: [59.7, 17.9],
      GOT: [57.7, 12.3],
      CPH: [55.6, 12.6],
      FCO: [41.8, 12.2],
      MXP: [45.6, 8.7],
      TXL: [52.6, 13.3],
      BER: [52.4, 13.5],
      HAM: [53.6, 10.0],
      MUC: [48.4, 11.8],
      AMM: [31.7, 36.0],
      TLV: [32.0, 34.9],
      BEY: [33.8, 35.5],
      BGW: [33.3, 44.2],
      EBL: [36.2, 43.96],
      RUH: [24.96, 46.7],
      JED: [21.7, 39.2],
      ADD: [9.0, 38.8],
      NBO: [-1.3, 36.9],
      DAR: [-6.9, 39.2],
      KGL: [-1.97, 30.1],
      MBA: [-4.0, 39.6],
      LOS: [6.6, 3.3],
      ACC: [5.6, -0.2],
      DKR: [14.7, -17.5],
      LAD: [-8.9, 13.2],
      MPM: [-25.9, 32.6],
      GUM: [13.5, 144.8],
      NOU: [-22.0, 166.2],
      PER: [-31.9, 115.97],
      MNL: [14.5, 121.0],
      NRT: [35.8, 140.4],
      HND: [35.5, 139.8],
      KIX: [34.4, 135.2],
      ICN: [37.5, 126.4],
      FUK: [33.6, 130.5],
      OKA: [26.2, 127.6],
      HKG: [22.3, 113.9],
      TPE: [25.1, 121.2],
      RGN: [16.9, 96.1],
    };
    const wrong: string[] = [];
    for (const [colo, [latitude, longitude]] of Object.entries(borderline)) {
      const byTable = COLO_REGIONS.get(colo);
      const byPoint = callerRegion({ latitude: String(latitude), longitude: String(longitude) });
      if (byTable !== byPoint) wrong.push(`${colo}: table ${byTable}, nearest ${byPoint}`);
    }
    expect(wrong).toEqual([]);
  });
});
