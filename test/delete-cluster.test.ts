/**
 * DELETE /admin/clusters/{cluster}: irreversible, so only with ?confirm=<the
 * name>; then every member's storage and alarm are gone (removed replicas'
 * too), the directory forgets the cluster, and the name's next use is a new,
 * empty cluster whose first term follows the deleted one's last.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ClusterDirectory } from "../durable-objects/directory";
import { nodeObjectName } from "../durable-objects/node-rpc";
import { memberIds } from "../workers/cluster-delete";
import { deleteByName } from "./delete-helpers";
import { addReplicaRetrying, call, exec, freshCluster, query, status, waitUntil } from "./helpers";

interface Storage {
  userTables: string[];
  kvKeys: number;
  alarm: number | null;
}

async function storageOf(c: string, member: string): Promise<Storage> {
  const ns = env.NODE as unknown as DurableObjectNamespace;
  const stub = ns.get(ns.idFromName(nodeObjectName(c, member)));
  return runInDurableObject(stub, async (_, state) => ({
    userTables: state.storage.sql
      .exec<{ name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'",
      )
      .toArray()
      .map((r) => r.name),
    kvKeys: [...state.storage.kv.list()].length,
    alarm: await state.storage.getAlarm(),
  }));
}

describe("deleting a cluster", () => {
  it("is refused without the name repeated, and changes nothing", async () => {
    const c = freshCluster("del-refused");
    expect((await exec(c, [{ sql: "CREATE TABLE t (a)" }])).status).toBe(200);
    for (const confirm of [null, "", `${c}x`, c.toUpperCase()]) {
      const refused = await deleteByName(c, confirm);
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      expect(JSON.stringify(refused.body)).toContain("confirm");
    }
    const read = await query(c, "SELECT count(*) AS n FROM t", { consistency: "strong" });
    expect(read.status).toBe(200);
  });

  it("needs the admin token", async () => {
    const c = freshCluster("del-token");
    const refused = await call("DELETE", `/admin/clusters/${c}?confirm=${c}`, {
      token: "dev-data-token",
    });
    expect(refused.status).toBe(401);
  });

  it("empties every member, removed ones included, and frees the name", async () => {
    const c = freshCluster("del");
    expect(
      (
        await exec(c, [
          { sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" },
          { sql: "INSERT INTO t (v) VALUES ('a'), ('b')" },
        ])
      ).status,
    ).toBe(200);
    const added = await addReplicaRetrying(c);
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    expect(added.body.id).toBe("replica-5");
    await waitUntil("replica-5 to catch up", async () => {
      const s = await status(c);
      return s.body.replicas.every((r) => r.ackedLsn === s.body.master.lsn);
    });
    const removed = await call("DELETE", `/admin/clusters/${c}/replicas/replica-1`);
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    // The removed replica keeps its data until the cluster goes.
    expect((await storageOf(c, "replica-1")).userTables).toEqual(["t"]);
    expect((await storageOf(c, "node-0")).alarm).not.toBeNull();

    const deleted = await deleteByName(c, c);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expect(deleted.body.cluster).toBe(c);
    expect(deleted.body.members[0]).toBe("node-0");
    expect([...deleted.body.members].sort()).toEqual(
      ["node-0", "replica-1", "replica-2", "replica-3", "replica-4", "replica-5"].sort(),
    );
    // First the directory: a master starting (as one does to be looked at) reads it.
    const directory = env.DIRECTORY as unknown as DurableObjectNamespace;
    const left = await runInDurableObject(directory.get(directory.idFromName(c)), (_, state) =>
      [...state.storage.kv.list()].map(([key, value]) => ({ key, value })),
    );
    // One record: the next use's term, after every term of the deleted cluster.
    expect(left).toEqual([
      { key: "record", value: { term: 2, master: "node-0", since: expect.any(Number) } },
    ]);
    for (const member of deleted.body.members) {
      const left = await storageOf(c, member);
      expect(left.userTables, member).toEqual([]);
      expect(left.alarm, member).toBeNull();
    }

    // The name is free: its next use is a new cluster, empty, with the default replicas, in
    // a term no decision of the deleted one (a promotion under way, say) can name.
    const missing = await query(c, "SELECT * FROM t", { consistency: "strong" });
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.body)).toMatch(/no such table/);
    const again = await exec(c, [
      { sql: "CREATE TABLE t (a)" },
      { sql: "INSERT INTO t VALUES (1)" },
    ]);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const s = await status(c);
    expect((s.body.master as unknown as { term: number }).term).toBe(2);
    expect(s.body.replicas.map((r) => r.id).sort()).toEqual([
      "replica-1",
      "replica-2",
      "replica-3",
      "replica-4",
    ]);
    await waitUntil("the new cluster's replicas to ack", async () => {
      const now = await status(c);
      return now.body.replicas.every((r) => r.ackedLsn === now.body.master.lsn);
    });
    const verified = await call<{ agree: boolean }>("POST", `/admin/clusters/${c}/verify`);
    expect(verified.body.agree).toBe(true);
  });

  it("a second DELETE of the same name deletes the new, empty cluster and answers the same", async () => {
    const c = freshCluster("del-twice");
    expect((await exec(c, [{ sql: "CREATE TABLE t (a)" }])).status).toBe(200);
    expect((await deleteByName(c, c)).status).toBe(200);
    const second = await deleteByName(c, c);
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect((await storageOf(c, "node-0")).userTables).toEqual([]);
  });
});

describe("while a deletion runs", () => {
  it("no master starts: requests fail and leave nothing, and the name works once it is done", async () => {
    const c = freshCluster("del-midway");
    const directory = env.DIRECTORY as unknown as DurableObjectNamespace<ClusterDirectory>;
    const stub = directory.get(directory.idFromName(c));
    const marked = await stub.markDeleting();
    const refused = await exec(c, [{ sql: "CREATE TABLE t (a)" }]);
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    // Only the deletion that marked it forgets it.
    expect(await stub.forget(marked.term + 1)).toBe(false);
    expect(await stub.forget(marked.term)).toBe(true);
    expect(await stub.forget(marked.term)).toBe(false);
    expect((await storageOf(c, "node-0")).userTables).toEqual([]);
    const after = await exec(c, [{ sql: "CREATE TABLE t (a)" }]);
    expect(after.status, JSON.stringify(after.body)).toBe(200);
  });
});

describe("memberIds", () => {
  const envOf = (replicas: string) => ({ DEFAULT_REPLICAS: replicas }) as unknown as Env;
  it("puts the master first and names every replica id ever given out", () => {
    expect(
      memberIds(envOf("3"), {
        term: 3,
        master: "replica-2",
        since: 0,
        config: {
          replicas: ["node-0", "replica-3", "replica-5"],
          tunables: {},
          nextReplica: 6,
          maxLeaseMs: 500,
        },
      }),
    ).toEqual(["replica-2", "node-0", "replica-3", "replica-5", "replica-1", "replica-4"]);
  });
  it("falls back on the default topology for a cluster that never published its members", () => {
    expect(memberIds(envOf("2"), { term: 1, master: "node-0", since: 0 })).toEqual([
      "node-0",
      "replica-1",
      "replica-2",
    ]);
  });
});
