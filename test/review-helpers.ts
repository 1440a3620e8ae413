/**
 * What the adversarial reviews' reproductions share (safety-review*.test.ts):
 * a write that must pass, each replica's state, and the check that every
 * coherent replica serves the master's exact rows and verify agrees.
 */
import { expect } from "vitest";
import type { AppendRequest } from "../core/protocol";
import { replicaSettings } from "../core/replica-settings";
import { defaultTunables } from "../core/tunables";
import { call, exec, verify } from "./helpers";
import { NODES, converged, rowsOn } from "./node-images";

export async function ok(c: string, sql: string, params?: unknown[]) {
  const res = await exec(c, [{ sql, ...(params === undefined ? {} : { params }) }]);
  expect(res.status, `${sql.slice(0, 200)}: ${JSON.stringify(res.body).slice(0, 500)}`).toBe(200);
  return res;
}

export interface ReplicaStatus {
  id: string;
  state: string;
  ackedLsn: number;
  incoherentReason: string | null;
  lastError: string | null;
  snapshot: { id: string | null; lastError: string | null };
}

export async function replicaStates(c: string): Promise<ReplicaStatus[]> {
  const s = await call<{ replicas: ReplicaStatus[] }>("GET", `/admin/clusters/${c}/status`);
  return s.body.replicas;
}

/** Every replica coherent at the master's LSN within `ms`; else fails naming each one's state and error. */
export async function allCoherent(c: string, ms = 20_000): Promise<void> {
  try {
    await converged(c, ms);
  } catch {
    const stuck = (await replicaStates(c)).filter((r) => r.state !== "coherent" || r.lastError);
    expect(
      stuck.map(
        (r) =>
          `${r.id} ${r.state} acked ${r.ackedLsn} (${r.incoherentReason}): ${r.lastError ?? r.snapshot.lastError}`,
      ),
      "replicas that never became coherent",
    ).toEqual([]);
  }
}

/** Every replica coherent, each serving the master's rows for `sql`, and verify agrees. */
export async function sameOnEveryNode(
  c: string,
  sql: string,
  nodes: string[] = NODES,
  ms = 30_000,
): Promise<void> {
  await allCoherent(c, ms);
  const states = await replicaStates(c);
  const master = await rowsOn(c, "master", sql);
  for (const node of nodes.filter((n) => n !== "master")) {
    const state = states.find((r) => r.id === node);
    expect(
      await rowsOn(c, node, sql),
      `${node} (${state?.state}, reason ${state?.incoherentReason}) serves other rows than the master for ${sql}`,
    ).toEqual(master);
  }
  const v = await verify(c);
  expect(v.body.mismatches, "verify").toEqual([]);
  expect(v.body.agree).toBe(true);
}

/**
 * A heartbeat to replica-1 as the master `from` of `term` would send it
 * (no records), for reproductions that play a master's messages by hand.
 */
export function heartbeat(
  cluster: string,
  from: string,
  term: number,
  termStartLsn: number,
  lsn: number,
  leaseMs = 0,
): AppendRequest {
  return {
    cluster,
    replicaId: "replica-1",
    from,
    term,
    termStartLsn,
    sentAt: Date.now(),
    masterLsn: lsn,
    leaseUntil: leaseMs > 0 ? Date.now() + leaseMs : 0,
    commitPoint: lsn,
    settings: replicaSettings(defaultTunables()),
    records: [],
    truncatedThrough: 0,
    pull: false,
    ackedLsn: lsn,
  };
}
