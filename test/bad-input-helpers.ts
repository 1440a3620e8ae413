/**
 * The bad-input sweeps (test/bad-input-*.test.ts): bad input through the front
 * door, route by route. Each case must get its documented 4xx in the
 * `{"error": {"code", "message"}}` shape and change nothing: the master's LSN
 * and term, the replicas and their states, every node's table checksums
 * (verify) and the tunables are the same afterwards.
 *
 * test/errors.test.ts shows each error code once; the sweeps cover the input
 * space. Each describe block has one cluster that all its cases run against,
 * and every case is compared with the state the cluster had before the first,
 * so a case that did change something fails itself, not a later one.
 */
import { beforeAll, expect, it } from "vitest";
import { app } from "../workers/app";
import { type ApiResult, call, exec, freshCluster } from "./helpers";

export type Result = ApiResult<Record<string, unknown>>;
export type Send = (c: string) => Promise<Result>;

export interface Case {
  name: string;
  send: Send;
  status: number;
  /** The code, or the codes either of which is right (a refusal by the guard or by SQLite). */
  code: string | readonly string[];
}

export const REPLICAS = ["replica-1", "replica-2", "replica-3", "replica-4"];

/**
 * SQL tables this project keeps in every node (migrations/index.ts): row
 * capture's buffer and the trigger guard's flag. The rest of its state is in
 * KV, out of SQL's reach.
 */
export const INTERNAL_TABLES = ["_repl_changes", "_repl_applying"];

/** Tables that held internal state before it moved to KV: they no longer exist. */
export const FORMER_INTERNAL_TABLES = [
  "_repl_meta",
  "_repl_log",
  "_repl_results",
  "_repl_tunables",
  "_repl_replicas",
  "_repl_schema_version",
];

/** A refusal of a name that is reserved, or of one that does not exist at all. */
export const REFUSED_NAME = ["RESERVED_NAME", "INVALID_SQL"] as const;

// ---------------------------------------------------------------------------
// The error shape and the no-change check

/** Status, code, JSON content type, the error shape, and nothing a client should not see. */
export function expectError(res: Result, status: number, code: string | readonly string[]): void {
  const context = JSON.stringify(res.body).slice(0, 400);
  expect(res.status, context).toBe(status);
  expect(res.headers.get("content-type") ?? "", context).toMatch(/^application\/json/);
  expect(Object.keys(res.body), context).toEqual(["error"]);
  const error = res.body.error as Record<string, unknown>;
  if (typeof code === "string") expect(error.code, context).toBe(code);
  else expect(code, context).toContain(error.code);
  expect(error.message, context).toBeTypeOf("string");
  const message = error.message as string;
  expect(message.length, context).toBeGreaterThan(0);
  expect(message, context).not.toMatch(/\n\s+at\s|<html|<!doctype|internal error/i);
  if (status === 503) expect(res.headers.get("retry-after"), context).toMatch(/^\d+$/);
}

export interface State {
  lsn: number;
  term: number;
  replicas: { id: string; state: string; ackedLsn: number }[];
  verify: unknown;
  tunables: Record<string, unknown>;
}

/** What a bad request must not change. */
export async function state(c: string): Promise<State> {
  const s = await call<{
    master: { lsn: number; term: number };
    replicas: { id: string; state: string; ackedLsn: number }[];
  }>("GET", `/admin/clusters/${c}/status`);
  expect(s.status, JSON.stringify(s.body)).toBe(200);
  const v = await call("POST", `/admin/clusters/${c}/verify`);
  expect(v.status, JSON.stringify(v.body)).toBe(200);
  expect(v.body.agree, JSON.stringify(v.body)).toBe(true);
  const t = await call<Record<string, { value: unknown }>>("GET", `/admin/clusters/${c}/tunables`);
  expect(t.status).toBe(200);
  return {
    lsn: s.body.master.lsn,
    term: s.body.master.term,
    replicas: s.body.replicas.map(({ id, state, ackedLsn }) => ({ id, state, ackedLsn })),
    verify: v.body,
    tunables: Object.fromEntries(Object.entries(t.body).map(([k, d]) => [k, d.value])),
  };
}

/**
 * One cluster for a describe block: a table `t` with three rows, then its state.
 * Every case runs against it and is followed by a comparison with that state.
 */
export function sweepCluster(
  prefix: string,
  extra: { sql: string }[] = [],
): { name: string; before: () => State } {
  const name = freshCluster(prefix);
  let before: State | null = null;
  beforeAll(async () => {
    const ddl = await exec(name, [
      { sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INTEGER)" },
      { sql: "INSERT INTO t (v, n) VALUES ('a', 1), ('b', 2), ('c', 3)" },
      ...extra,
    ]);
    expect(ddl.status, JSON.stringify(ddl.body)).toBe(200);
    before = await state(name);
    expect(before.replicas.map((r) => r.id)).toEqual(REPLICAS);
    expect(before.replicas.every((r) => r.state === "coherent")).toBe(true);
    expect(before.tunables.debug_fault_injection).toBe(false);
  });
  return {
    name,
    before: () => {
      if (before === null) throw new Error("the sweep cluster was not set up");
      return before;
    },
  };
}

export function runCases(cases: Case[], cluster: { name: string; before: () => State }): void {
  const titled = cases.map(
    (c) => [`${c.name}: ${c.status} ${c.code}, nothing changed`, c] as const,
  );
  it.each(titled)("%s", async (_, { send, status, code }) => {
    expectError(await send(cluster.name), status, code);
    expect(await state(cluster.name)).toEqual(cluster.before());
  });
}

// ---------------------------------------------------------------------------
// Routes

/**
 * Every route the app serves, from Hono's own table. The libSQL endpoint
 * answers in libSQL's error shape (`{message, code}`), not this API's: its
 * sweeps are in libsql-bad-input.test.ts.
 */
export const ROUTES = app.routes
  .filter((r) => r.method !== "ALL" && r.path !== "/" && !r.path.startsWith("/libsql"))
  .map((r) => ({ method: r.method, path: r.path }));

/** A concrete path for a route pattern: `:cluster`, `:id`, `:table`, `:action{a|b}`. */
export function concrete(path: string, cluster: string): string {
  return path
    .replace(":cluster", encodeURIComponent(cluster))
    .replace(":id", "replica-1")
    .replace(":table", "t")
    .replace(/:\w+\{([^|}]+)[^}]*\}/, "$1");
}

export function url(path: string, cluster: string): string {
  const p = concrete(path, cluster);
  return p === "/metrics" ? `/metrics?cluster=${encodeURIComponent(cluster)}` : p;
}

export const isData = (path: string) => path.startsWith("/v1/");

/** Just over the 1 MiB body limit. */
export const HUGE = "x".repeat(1_048_577);
/** Nesting far deeper than any validator or serialiser recurses comfortably. */
export const DEEP = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
