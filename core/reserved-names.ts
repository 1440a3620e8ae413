/**
 * Names user SQL may not create or touch: this project's (`_repl_`), the
 * platform's (`_cf_`, such as the KV table `_cf_KV`), the local runtime's
 * (`__miniflare_`). SQLite's own `sqlite_` objects are SQLite's to maintain.
 */
export const RESERVED_PREFIXES: readonly string[] = ["_repl_", "_cf_", "__cf_", "__miniflare_"];

const SQLITE_PREFIX = "sqlite_";

export function isReservedName(name: string): boolean {
  const lower = name.toLowerCase();
  return RESERVED_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

/** SQLite's own tables (sqlite_schema, sqlite_sequence, sqlite_stat1, autoindexes). */
export function isSqliteName(name: string): boolean {
  return name.toLowerCase().startsWith(SQLITE_PREFIX);
}

/** Objects that are the user's: neither internal nor SQLite's. */
export function isUserName(name: string): boolean {
  return !isReservedName(name) && !isSqliteName(name);
}
