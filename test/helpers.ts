/**
 * Test helpers: real HTTP requests through the front door (the Worker's own
 * fetch handler inside workerd), with the development tokens.
 */
import { exports } from "cloudflare:workers";
import type { IdleStatus } from "../durable-objects/master/idle";

export const ADMIN = "dev-admin-token";
export const DATA = "dev-data-token";

export interface ApiResult<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
}

export async function call<T = Record<string, unknown>>(
  method: string,
  path: string,
  options: {
    body?: unknown;
    raw?: string;
    token?: string | null;
    headers?: Record<string, string>;
    /** What the platform would put in request.cf (the caller's colo, say). */
    cf?: Record<string, unknown>;
  } = {},
): Promise<ApiResult<T>> {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    ...options.headers,
  };
  const token =
    options.token === undefined ? (path.startsWith("/admin") ? ADMIN : DATA) : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const body =
    options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const response = await exports.default.fetch(
    new Request(`http://cluster.test${path}`, {
      method,
      headers,
      body,
      ...(options.cf === undefined ? {} : { cf: options.cf }),
    }),
  );
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`non-JSON response ${response.status}: ${text.slice(0, 200)}`);
  }
  return { status: response.status, body: parsed as T, headers: response.headers };
}

export const exec = (
  cluster: string,
  statements: { sql: string; params?: unknown[] }[],
  key?: string,
) =>
  call("POST", `/v1/clusters/${cluster}/exec`, {
    body: { statements },
    ...(key === undefined ? {} : { headers: { "idempotency-key": key } }),
  });

/** An answer and the wall-clock time it came: when a waiting commit was answered. */
export interface Timed {
  status: number;
  body: Record<string, unknown>;
  at: number;
}

export const timed = (answer: ReturnType<typeof exec>): Promise<Timed> =>
  answer.then((r) => ({ status: r.status, body: r.body, at: Date.now() }));

/** A read through the front door; `colo` is the Cloudflare colo the platform would name. */
export const query = (
  cluster: string,
  sql: string,
  extra: Record<string, unknown> = {},
  colo?: string,
) =>
  call<{ rows: Record<string, unknown>[]; servedBy: string; appliedLsn: number }>(
    "POST",
    `/v1/clusters/${cluster}/query`,
    { body: { sql, ...extra }, ...(colo === undefined ? {} : { cf: { colo } }) },
  );

export const status = (cluster: string) =>
  call<StatusBody>("GET", `/admin/clusters/${cluster}/status`);

export const patchTunables = (cluster: string, patch: Record<string, unknown>) =>
  call("PATCH", `/admin/clusters/${cluster}/tunables`, { body: patch });

export const verify = (cluster: string) =>
  call<{ agree: boolean; lsn: number; mismatches: string[] }>(
    "POST",
    `/admin/clusters/${cluster}/verify`,
  );

export interface StatusBody {
  master: { lsn: number; waiter: { outstanding: number; handedOff: number } };
  replicas: {
    id: string;
    state: string;
    ackedLsn: number;
    lagMs: number;
    incoherentReason: string | null;
  }[];
}

export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 20_000,
  everyMs = 50,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}`);
}

let counter = 0;
/** A fresh cluster name per test, so tests in one file do not share state. */
export function freshCluster(prefix: string): string {
  counter++;
  return `${prefix}-${counter}-${Math.floor(Math.random() * 1e6)}`;
}

/**
 * Adds a replica (with a location hint if given), retrying while the
 * membership rule refuses it (503 until the last replica added has caught
 * up), as a client would.
 */
export async function addReplicaRetrying(c: string, location?: string) {
  const add = () =>
    call<{ id: string; location: string | null; replicas: string[] }>(
      "POST",
      `/admin/clusters/${c}/replicas`,
      location === undefined ? {} : { body: { location } },
    );
  let added = await add();
  for (let i = 0; added.status === 503 && i < 100; i++) {
    await new Promise((r) => setTimeout(r, 100));
    added = await add();
  }
  return added;
}

/** The master's sleep and wake (scale to zero), as status reports them. */
export const idleOf = async (cluster: string) =>
  ((await status(cluster)).body.master as unknown as { idle: IdleStatus }).idle;

/** Waits until the master of `cluster` sleeps. */
export const untilAsleep = (cluster: string, timeoutMs = 15_000) =>
  waitUntil("the master to sleep", async () => (await idleOf(cluster)).asleep, timeoutMs);
