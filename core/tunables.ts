/**
 * The tunables: their types, defaults and validation (the schema itself is in
 * tunable-specs.ts). Validation is all-or-nothing: a PATCH either passes for
 * every name or changes nothing, and a patch that would leave two tunables
 * contradicting each other is refused naming both.
 */
import { ApiError } from "./errors";
import { SPECS, type TunableSpec } from "./tunable-specs";

export type TunableName = keyof typeof SPECS;
type ValueOf<S> = S extends { type: "bool" }
  ? boolean
  : S extends { type: "enum"; values: readonly (infer V)[] }
    ? V
    : number;
export type Tunables = { [K in TunableName]: ValueOf<(typeof SPECS)[K]> };
export type TunableValue = boolean | number | string;
export type SyncMode = Tunables["sync_mode"];

export const TUNABLE_NAMES = Object.keys(SPECS) as TunableName[];

export function isTunableName(name: string): name is TunableName {
  return Object.hasOwn(SPECS, name);
}

export function defaultTunables(): Tunables {
  const out: Record<string, TunableValue> = {};
  for (const name of TUNABLE_NAMES) out[name] = SPECS[name].default;
  return out as Tunables;
}

export interface TunableDescription {
  value: TunableValue;
  default: TunableValue;
  type: "bool" | "int" | "float" | "enum";
  min: number | null;
  max: number | null;
  values?: readonly string[];
  description: string;
}

export function describeTunables(current: Tunables): Record<TunableName, TunableDescription> {
  const out = {} as Record<TunableName, TunableDescription>;
  for (const name of TUNABLE_NAMES) {
    const spec: TunableSpec = SPECS[name];
    const bounded = spec.type === "int" || spec.type === "float";
    out[name] = {
      value: current[name],
      default: spec.default,
      type: spec.type,
      min: bounded ? spec.min : null,
      max: bounded ? spec.max : null,
      ...(spec.type === "enum" ? { values: spec.values } : {}),
      description: spec.description,
    };
  }
  return out;
}

/**
 * The refused value as the error repeats it: scalars as sent (long strings cut),
 * arrays and objects as null, so an error body stays small and flat.
 */
function echo(value: unknown): unknown {
  if (typeof value === "string") return value.slice(0, 100);
  if (typeof value === "number" || typeof value === "boolean") return value;
  return null;
}

function checkValue(name: TunableName, value: unknown): TunableValue {
  const spec: TunableSpec = SPECS[name];
  const bad = (why: string) =>
    new ApiError("INVALID_TUNABLE_VALUE", `${name}: ${why}`, { name, value: echo(value) });
  if (spec.type === "bool") {
    if (typeof value !== "boolean") throw bad("expected true or false");
    return value;
  }
  if (spec.type === "enum") {
    if (typeof value !== "string" || !spec.values.includes(value)) {
      throw bad(`expected one of ${spec.values.join(", ")}`);
    }
    return value;
  }
  if (typeof value !== "number" || !Number.isFinite(value)) throw bad(`expected a ${spec.type}`);
  if (spec.type === "int" && !Number.isInteger(value)) throw bad("expected an integer");
  if (value < spec.min || value > spec.max)
    throw bad(`must be between ${spec.min} and ${spec.max}`);
  return value;
}

/**
 * Validates a whole PATCH and returns the merged tunables, or throws for the
 * first bad entry: unknown names first, then values, so nothing is half-applied.
 */
export function applyPatch(
  current: Tunables,
  patch: unknown,
): { next: Tunables; changed: TunableName[] } {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) {
    throw new ApiError("BAD_REQUEST", "expected a JSON object of tunable names to values");
  }
  const entries = Object.entries(patch);
  if (entries.length === 0) throw new ApiError("BAD_REQUEST", "no tunables given");
  const unknown = entries.map(([k]) => k).filter((k) => !isTunableName(k));
  if (unknown.length > 0) {
    throw new ApiError("UNKNOWN_TUNABLE", `unknown tunable: ${unknown.join(", ")}`, {
      names: unknown,
    });
  }
  const next = { ...current } as Record<TunableName, TunableValue>;
  const changed: TunableName[] = [];
  for (const [name, value] of entries as [TunableName, unknown][]) {
    next[name] = checkValue(name, value);
    changed.push(name);
  }
  checkConsistent(next as Tunables, changed);
  return { next: next as Tunables, changed };
}

/**
 * Pairs of tunables that contradict each other past a bound: `low` must stay
 * below (or, with `orEqual`, at most) `high`. Checked when a patch touches
 * either, so a stored pair from an older build never blocks unrelated patches.
 */
const ORDERED_PAIRS: readonly {
  low: TunableName;
  high: TunableName;
  orEqual: boolean;
  why: string;
}[] = [
  {
    low: "commit_timeout_ms",
    high: "idempotency_retention_ms",
    orEqual: true,
    why: "a saved result must outlive the longest wait of its commit, or a retry runs it twice",
  },
  {
    low: "heartbeat_ms",
    high: "coherency_lease_ms",
    orEqual: false,
    why: "heartbeats must renew a lease before it runs out",
  },
  {
    low: "rep_timeout_ms",
    high: "commit_timeout_ms",
    orEqual: true,
    why: "a commit must wait for its replicas' acks at least until they are marked incoherent",
  },
  {
    low: "log_retain_records",
    high: "log_max_records",
    orEqual: true,
    why: "the records kept after every replica acked them are part of the most kept at all",
  },
];

function checkConsistent(next: Tunables, changed: readonly TunableName[]): void {
  const modeTouched = changed.includes("sync_mode") || changed.includes("durable_lsns");
  if (modeTouched && next.durable_lsns === true && next.sync_mode === "none") {
    const name = changed.includes("durable_lsns") ? "durable_lsns" : "sync_mode";
    throw new ApiError(
      "INVALID_TUNABLE_VALUE",
      "durable_lsns needs sync_mode full or quorum: under none a commit waits for no replica, " +
        "so no majority could be counted; turn durable_lsns off in the same change",
      {
        name,
        value: next[name],
        conflictsWith: name === "durable_lsns" ? "sync_mode" : "durable_lsns",
      },
    );
  }
  for (const { low, high, orEqual, why } of ORDERED_PAIRS) {
    if (!changed.includes(low) && !changed.includes(high)) continue;
    const a = next[low] as number;
    const b = next[high] as number;
    if (orEqual ? a <= b : a < b) continue;
    const name = changed.includes(low) ? low : high;
    throw new ApiError(
      "INVALID_TUNABLE_VALUE",
      `${low} (${a}) must be ${orEqual ? "at most" : "below"} ${high} (${b}): ${why}`,
      { name, value: next[name], conflictsWith: name === low ? high : low },
    );
  }
}

/** Loads stored values, ignoring names or values a newer or older build would reject. */
export function tunablesFromStored(rows: Iterable<{ name: string; value: string }>): Tunables {
  const out = defaultTunables() as Record<TunableName, TunableValue>;
  for (const row of rows) {
    if (!isTunableName(row.name)) continue;
    try {
      out[row.name] = checkValue(row.name, JSON.parse(row.value));
    } catch {
      // A stored value outside today's bounds falls back to the default.
    }
  }
  return out as Tunables;
}
