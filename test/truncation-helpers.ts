/** Clusters for the tests of a replica's log truncation (attack-18c/18d truncation tests). */
import { expect } from "vitest";
import { call, exec, freshCluster } from "./helpers";

/**
 * A cluster with table `t` whose only replica is replica-1 (the others
 * removed): writes go quickly, and no other replica's messages hide what one does.
 */
export async function oneReplicaCluster(prefix: string): Promise<string> {
  const c = freshCluster(prefix);
  expect((await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }])).status).toBe(
    200,
  );
  for (const id of ["replica-2", "replica-3", "replica-4"]) {
    const gone = await call("DELETE", `/admin/clusters/${c}/replicas/${id}`);
    expect(gone.status, JSON.stringify(gone.body)).toBe(200);
  }
  return c;
}

/**
 * `commits` inserts of `value` into `t` by 16 clients; `keyed`: each under an
 * idempotency key of its own, so every record holds a saved result.
 */
export async function insertMany(
  c: string,
  commits: number,
  value: string,
  keyed: boolean,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < commits) {
        const i = next++;
        const statements = [{ sql: "INSERT INTO t (v) VALUES (?)", params: [value] }];
        const r = await exec(c, statements, keyed ? `${c}-${i}` : undefined);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
      }
    }),
  );
}
