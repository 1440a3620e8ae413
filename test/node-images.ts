/**
 * Reading what each node holds, exactly, through the front door: a query
 * pinned to the master or one replica, rows as arrays of exact values.
 */
import { expect } from "vitest";
import { call, query, status, verify, waitUntil } from "./helpers";

export const NODES = ["master", "replica-1", "replica-2", "replica-3", "replica-4"];

export async function rowsOn(c: string, node: string, sql: string): Promise<unknown[][]> {
  const res = await query(c, sql, { replica: node, consistency: "any", format: "arrays" });
  expect(res.status, `${node}: ${JSON.stringify(res.body)}`).toBe(200);
  return (res.body as unknown as { rows: unknown[][] }).rows;
}

/** Waits until every replica acked the master's LSN. */
export async function converged(c: string, timeoutMs = 20_000): Promise<void> {
  await waitUntil(
    "every replica at the master's LSN",
    async () => {
      const s = await status(c);
      return s.body.replicas.every(
        (r) => r.ackedLsn === s.body.master.lsn && r.state === "coherent",
      );
    },
    timeoutMs,
  );
}

/** The same exact rows on every node, verify agrees, and the rows are returned. */
export async function sameEverywhere(c: string, sql: string, nodes = NODES): Promise<unknown[][]> {
  await converged(c);
  const [first, ...rest] = await Promise.all(nodes.map((n) => rowsOn(c, n, sql)));
  rest.forEach((rows, i) => {
    expect(rows, `${nodes[i + 1]} vs master for ${sql}`).toEqual(first);
  });
  const v = await verify(c);
  expect(v.body.mismatches, JSON.stringify(v.body)).toEqual([]);
  expect(v.body.agree).toBe(true);
  return first ?? [];
}

export async function addReplica(c: string): Promise<string> {
  const added = await call<{ id: string }>("POST", `/admin/clusters/${c}/replicas`);
  expect(added.status, JSON.stringify(added.body)).toBe(201);
  return added.body.id;
}
