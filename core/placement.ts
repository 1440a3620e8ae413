/**
 * Placement: where each member lives and which replica is nearest a caller.
 *
 * A member may carry one of Cloudflare's Durable Object location hints. The
 * platform honours a hint only when the object is first created, and only as
 * best effort; after that an object never moves. So a hint is a property of
 * the member for its whole life, recorded with the membership and passed
 * whenever a stub is made (harmless after the first time).
 *
 * Reads go to the coherent replica nearest the caller. The caller's region
 * comes from the Cloudflare data centre that took the request
 * (`request.cf.colo`, an IATA code) through COLO_REGIONS below; a colo not
 * listed falls back to the caller's coordinates, then its continent.
 * Nearness between regions is the great-circle distance between the points
 * below, one per region, each a major city the region is served from.
 * Without a caller region (local development) or hints, every coherent
 * replica is equally near and one is chosen at random, as before placement.
 */

export const LOCATION_HINTS = [
  "wnam",
  "enam",
  "sam",
  "weur",
  "eeur",
  "apac",
  "oc",
  "afr",
  "me",
] as const;

export type LocationHint = (typeof LOCATION_HINTS)[number];

/** A member id (or "directory") and its hint. */
export type Locations = Record<string, LocationHint>;

export function isLocationHint(value: unknown): value is LocationHint {
  return typeof value === "string" && (LOCATION_HINTS as readonly string[]).includes(value);
}

/** Each region's reference point (latitude, longitude). */
const REGION_POINTS: Record<LocationHint, readonly [number, number]> = {
  wnam: [37.4, -121.9], // San Jose
  enam: [39.0, -77.5], // Ashburn
  sam: [-23.5, -46.6], // São Paulo
  weur: [50.1, 8.7], // Frankfurt
  eeur: [52.2, 21.0], // Warsaw
  apac: [1.35, 103.8], // Singapore
  oc: [-33.9, 151.2], // Sydney
  afr: [-26.2, 28.0], // Johannesburg
  me: [25.2, 55.3], // Dubai
};

const COLO_LISTS: Record<LocationHint, string> = {
  wnam: "SJC SFO LAX SEA PDX DEN PHX LAS SLC SAN SMF YVR YYC YEG ABQ BOI ANC HNL GDL OAK BUR ONT FAT RNO TUS MEX QRO MTY",
  enam: "IAD EWR JFK LGA BOS ATL ORD DFW IAH MIA MSP DTW CLT PHL YYZ YUL YOW MCI STL BNA IND CMH PIT RIC TPA MCO JAX MEM OMA BUF AUS SAT RDU CLE MKE PTY SJO MDE BOG CLO",
  sam: "GRU GIG EZE SCL LIM UIO GYE MVD ASU FOR POA CWB BSB SSA REC BEL MAO FLN",
  weur: "LHR LGW MAN EDI DUB CDG MRS AMS BRU FRA DUS HAM MUC STR TXL BER ZRH GVA MAD BCN LIS MXP FCO CPH LUX LYS ALG TUN CMN DKR ZAG LJU PRG",
  eeur: "WAW BUD VIE OTP SOF ATH KBP RIX TLL VNO BEG HEL SKP TIA KIV BTS IST SAW OSL ARN GOT",
  apac: "NRT HND KIX ICN HKG TPE SIN KUL BKK CGK MNL SGN HAN MAA CCU CMB DAC PNH RGN FUK OKA GUM",
  oc: "SYD MEL BNE PER ADL AKL CHC CBR HBA NOU",
  afr: "JNB CPT DUR LOS ACC NBO DAR KGL MBA LAD MPM",
  me: "DXB AUH DOH BAH KWI RUH JED DMM MCT AMM TLV BGW BEY EBL CAI ADD KHI BOM DEL BLR HYD LHE ISB KTM",
};

/** The documented mapping from a Cloudflare colo (IATA code) to its region. */
export const COLO_REGIONS: ReadonlyMap<string, LocationHint> = new Map(
  LOCATION_HINTS.flatMap((hint) =>
    COLO_LISTS[hint].split(" ").map((colo) => [colo, hint] as [string, LocationHint]),
  ),
);

const CONTINENT_REGIONS: ReadonlyMap<string, LocationHint> = new Map([
  ["NA", "enam"],
  ["SA", "sam"],
  ["EU", "weur"],
  ["AS", "apac"],
  ["OC", "oc"],
  ["AF", "afr"],
]);

/** A coordinate as request.cf gives it (a decimal string, or a number); anything else is none. */
function coordinate(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value !== "string" || !/^\s*-?\d+(\.\d+)?\s*$/.test(value)) return null;
  return Number(value);
}

/**
 * The region a request came from (`request.cf`: colo, then latitude and
 * longitude, then continent), or null when the platform did not say.
 */
export function callerRegion(cf: unknown): LocationHint | null {
  if (cf === null || typeof cf !== "object") return null;
  const { colo, latitude, longitude, continent } = cf as Record<string, unknown>;
  if (typeof colo === "string") {
    const region = COLO_REGIONS.get(colo.toUpperCase());
    if (region !== undefined) return region;
  }
  const lat = coordinate(latitude);
  const lon = coordinate(longitude);
  if (lat !== null && lon !== null && Math.abs(lat) <= 90 && Math.abs(lon) <= 180) {
    return nearestRegion(lat, lon);
  }
  if (typeof continent === "string") return CONTINENT_REGIONS.get(continent) ?? null;
  return null;
}

function nearestRegion(lat: number, lon: number): LocationHint {
  let best: LocationHint = LOCATION_HINTS[0];
  let bestKm = Number.POSITIVE_INFINITY;
  for (const hint of LOCATION_HINTS) {
    const km = kmBetween([lat, lon], REGION_POINTS[hint]);
    if (km < bestKm) [best, bestKm] = [hint, km];
  }
  return best;
}

/** Great-circle distance in kilometres (haversine). */
function kmBetween(a: readonly [number, number], b: readonly [number, number]): number {
  const rad = Math.PI / 180;
  const dLat = (b[0] - a[0]) * rad;
  const dLon = (b[1] - a[1]) * rad;
  const h =
    Math.sin(dLat / 2) ** 2 + Math.cos(a[0] * rad) * Math.cos(b[0] * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * 6371 * Math.asin(Math.min(1, Math.sqrt(h)));
}

export function regionKm(from: LocationHint, to: LocationHint): number {
  return kmBetween(REGION_POINTS[from], REGION_POINTS[to]);
}

export interface PlacedMember {
  id: string;
  location: LocationHint | null;
}

/**
 * The members in the order a read from `caller` should try them: nearest
 * region first, members without a hint after every hinted one (where they
 * live is unknown), ties in random order so equally near replicas share the
 * load. Without a caller region every member ties.
 */
export function byNearness<T extends PlacedMember>(
  caller: LocationHint | null,
  members: readonly T[],
  random: () => number = Math.random,
): T[] {
  const distance = (m: T) =>
    caller === null
      ? 0
      : m.location === null
        ? Number.POSITIVE_INFINITY
        : regionKm(caller, m.location);
  return members
    .map((member) => ({ member, km: distance(member), tie: random() }))
    .sort((a, b) => a.km - b.km || a.tie - b.tie)
    .map((entry) => entry.member);
}

/**
 * The default topology's hints from the DEFAULT_LOCATIONS var:
 * `node-0=enam,replica-1=weur,directory=enam` (empty: no hints). A bad entry
 * is a configuration error, said plainly rather than ignored.
 */
export function parseLocations(
  text: string | undefined,
  isMember: (id: string) => boolean,
): Locations {
  const locations: Locations = {};
  for (const entry of (text ?? "").split(",").map((s) => s.trim())) {
    if (entry === "") continue;
    const [id = "", hint = "", ...rest] = entry.split("=").map((s) => s.trim());
    // Replica ids are replica-1, replica-2, ... (core/protocol.ts replicaId): no 0, no leading zeros.
    const real = id === "directory" || (isMember(id) && !/^replica-0/.test(id));
    if (rest.length > 0 || !real || !isLocationHint(hint)) {
      throw new Error(
        `DEFAULT_LOCATIONS entry "${entry.slice(0, 60)}" is not member=hint (members node-0, replica-1, replica-2, ... or directory; hints ${LOCATION_HINTS.join(", ")})`,
      );
    }
    if (Object.hasOwn(locations, id)) throw new Error(`DEFAULT_LOCATIONS names ${id} twice`);
    locations[id] = hint;
  }
  return locations;
}

/** Locations as stored (JSON text), keeping only valid hints. */
export function locationsFromStored(text: string | null | undefined): Locations {
  if (text === null || text === undefined || text === "") return {};
  const parsed: unknown = JSON.parse(text);
  const locations: Locations = {};
  if (parsed === null || typeof parsed !== "object") return locations;
  for (const [id, hint] of Object.entries(parsed)) if (isLocationHint(hint)) locations[id] = hint;
  return locations;
}
