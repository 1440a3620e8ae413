/**
 * The default topology's location hints, from the DEFAULT_LOCATIONS var
 * (core/placement.ts parseLocations), read once per isolate for each text.
 */
import { MEMBER_ID } from "../core/members";
import { type Locations, parseLocations } from "../core/placement";

let parsed: { text: string; locations: Locations } | null = null;

export function defaultLocations(env: Env): Locations {
  const text = env.DEFAULT_LOCATIONS ?? "";
  if (parsed?.text !== text) {
    parsed = { text, locations: parseLocations(text, (id) => MEMBER_ID.test(id)) };
  }
  return parsed.locations;
}
