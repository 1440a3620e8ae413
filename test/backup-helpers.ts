/**
 * Helpers for the backup tests: an export read whole (or its first piece), an
 * import of a dump, each node's checksums as verify reports them, and the
 * snapshot's shadow tables left in the master's storage.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import { FIRST_MASTER } from "../core/members";
import type { NodeChecksums } from "../core/protocol";
import { nodeObjectName } from "../durable-objects/node-rpc";
import { ADMIN, type ApiResult, call, freshCluster } from "./helpers";

const decoder = new TextDecoder();

/** What a `sqlite3 .dump` begins with, for dumps written by hand. */
export const DUMP_HEAD = "PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\n";

function request(path: string, init: RequestInit = {}, token = ADMIN): Request {
  return new Request(`http://cluster.test${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
  });
}

export interface Dump {
  status: number;
  headers: Headers;
  text: string;
}

export async function exportDump(cluster: string, query = "", token = ADMIN): Promise<Dump> {
  const response = await exports.default.fetch(
    request(`/admin/clusters/${cluster}/export${query}`, {}, token),
  );
  const text = decoder.decode(await response.arrayBuffer());
  return { status: response.status, headers: response.headers, text };
}

/** The export's response with its body unread, to read a piece and walk away. */
export function exportResponse(cluster: string): Promise<Response> {
  return exports.default.fetch(request(`/admin/clusters/${cluster}/export`));
}

export async function importDump(
  cluster: string,
  dump: string | Uint8Array,
  headers: Record<string, string> = {},
  token = ADMIN,
): Promise<ApiResult> {
  const response = await exports.default.fetch(
    request(`/admin/clusters/${cluster}/import`, { method: "POST", body: dump, headers }, token),
  );
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: JSON.parse(text) as Record<string, unknown>,
  };
}

/** An import that must succeed: its answer. */
export async function imported(cluster: string, dump: string): Promise<Record<string, unknown>> {
  const res = await importDump(cluster, dump);
  expect(res.status, JSON.stringify(res.body).slice(0, 600)).toBe(200);
  return res.body;
}

/** Verify must agree; the master's checksums (schema, sqlite_sequence, fts5 settings, every table). */
export async function agreedChecksums(cluster: string): Promise<NodeChecksums> {
  const res = await call<{ agree: boolean; nodes: NodeChecksums[]; mismatches: string[] }>(
    "POST",
    `/admin/clusters/${cluster}/verify`,
  );
  expect(res.status).toBe(200);
  expect(res.body.mismatches).toEqual([]);
  expect(res.body.agree).toBe(true);
  const master = res.body.nodes[0];
  if (master === undefined) throw new Error("verify named no master");
  return master;
}

/** The same state: schema (with sqlite_sequence and fts5 settings) and every table's exact images. */
export function sameState(a: NodeChecksums, b: NodeChecksums): void {
  expect(b.schema).toBe(a.schema);
  expect(b.tables).toEqual(a.tables);
}

/**
 * Exports `source` (verify agreeing), imports the dump into a fresh cluster
 * named from `prefix`, and expects the same state there; the new cluster's name.
 */
export async function restoresIdentically(source: string, prefix: string): Promise<string> {
  const before = await agreedChecksums(source);
  const dump = await exportDump(source);
  expect(dump.status, dump.text.slice(0, 300)).toBe(200);
  const target = freshCluster(prefix);
  const res = await importDump(target, dump.text);
  expect(res.status, `${JSON.stringify(res.body).slice(0, 400)}\n${dump.text}`).toBe(200);
  sameState(before, await agreedChecksums(target));
  return target;
}

/** How many snapshot shadow tables the master holds now. */
export async function shadowTables(cluster: string): Promise<number> {
  const stub = env.NODE.get(env.NODE.idFromName(nodeObjectName(cluster, FIRST_MASTER)));
  return runInDurableObject(stub, (_, state) =>
    Number(
      state.storage.sql
        .exec<{ n: number }>(
          "SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table' AND substr(name, 1, 11) = '_repl_snap_'",
        )
        .one().n,
    ),
  );
}

/** The rows a query returns, values exact (docs/api.md, Values), in select order. */
export async function rows(cluster: string, sql: string): Promise<unknown[][]> {
  const res = await call<{ rows: unknown[][] }>("POST", `/v1/clusters/${cluster}/query`, {
    body: { sql, format: "arrays", replica: "master" },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.rows;
}
