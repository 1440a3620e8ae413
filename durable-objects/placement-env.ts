/**
 * The default topology's location hints, from the DEFAULT_LOCATIONS var
 * (core/placement.ts parseLocations), read once per isolate for each text.
 */
import { ApiError } from "../core/errors";
import { MEMBER_ID } from "../core/members";
import { type LocationHint, type Locations, parseLocations } from "../core/placement";

/** An object's stub, created where `hint` says if this call creates it (core/placement.ts). */
export function stubWithHint<T extends Rpc.DurableObjectBranded | undefined>(
  ns: DurableObjectNamespace<T>,
  id: DurableObjectId,
  hint: LocationHint | null | undefined,
): DurableObjectStub<T> {
  return hint ? ns.get(id, { locationHint: hint }) : ns.get(id);
}

let parsed: { text: string; locations: Locations } | null = null;

/** Throws MISCONFIGURED (500, no retry) naming the var when it is malformed. */
export function defaultLocations(env: Env): Locations {
  const text = env.DEFAULT_LOCATIONS ?? "";
  if (parsed?.text !== text) {
    try {
      parsed = { text, locations: parseLocations(text, (id) => MEMBER_ID.test(id)) };
    } catch (error) {
      throw new ApiError("MISCONFIGURED", error instanceof Error ? error.message : String(error));
    }
  }
  return parsed.locations;
}
