/// <reference types="vite/client" />
/**
 * The typed client has a method for every route of docs/api.md (read from the
 * doc, so a route documented without a method fails here), but for the few
 * listed below with the reason the client leaves them out; and every public
 * method of the client is called here, so that each is matched to the route it
 * sends. client/README.md's Routes table says the same.
 */
import { describe, expect, it } from "vitest";
import type { DosqliteClient } from "../client/index.ts";
import api from "../docs/api.md?raw";
import { docRoutes } from "./api-doc";
import { type Answer, fakeClient, ok, written } from "./client-fake-fetch";

/** Routes of docs/api.md without a client method, and why. */
const NOT_IN_CLIENT: Record<string, string> = {
  "GET /admin/ui": "the dashboard: a page for a browser",
  "GET /openapi.json": "the API description, for tools that read OpenAPI",
  "POST /libsql/{cluster}/v2/pipeline": "Hrana: @libsql/client and the ORMs speak it",
  "GET /libsql/{cluster}/v2": "Hrana's version probe",
  "POST /libsql/{cluster}/{consistency}/v2/pipeline": "Hrana, with a consistency",
  "GET /libsql/{cluster}/{consistency}/v2": "Hrana's version probe, with a consistency",
  "GET /v1/clusters/{cluster}/changes": "server-sent events: a stream, not a call and its answer",
  "GET /admin/clusters/{cluster}/export": "a streamed dump, not a JSON answer",
  "POST /admin/clusters/{cluster}/import": "a streamed dump as the body",
};

/** Methods that are no route of their own: a bookmark taken in, exec's shorthand, exec's private sender. */
const NOT_ROUTES = new Set(["constructor", "noteBookmark", "execute", "write"]);

/** Each public method, called once with the answer it expects back. */
const CALLS: Record<string, [Answer, (db: DosqliteClient) => Promise<unknown>]> = {
  exec: [written(1), (db) => db.exec([{ sql: "INSERT INTO t VALUES (1)" }])],
  insertRows: [written(2), (db) => db.insertRows("t", [{ a: 1 }])],
  query: [ok({ rows: [], servedBy: "master", appliedLsn: 2 }), (db) => db.query("SELECT 1")],
  "admin.status": [ok({}), (db) => db.admin.status()],
  "admin.tunables": [ok({}), (db) => db.admin.tunables()],
  "admin.patchTunables": [ok({}), (db) => db.admin.patchTunables({ heartbeat_ms: 100 })],
  "admin.verify": [ok({}), (db) => db.admin.verify()],
  "admin.replicas": [ok({}), (db) => db.admin.replicas()],
  "admin.addReplica": [{ status: 201, body: {} }, (db) => db.admin.addReplica()],
  "admin.removeReplica": [ok({}), (db) => db.admin.removeReplica("replica-4")],
  "admin.promote": [ok({}), (db) => db.admin.promote({ replica: "replica-1" })],
  "admin.metrics": [{ status: 200, body: "# text\n" }, (db) => db.admin.metrics()],
  "admin.deleteCluster": [
    ok({ cluster: "c", members: ["node-0"] }),
    (db) => db.admin.deleteCluster("c"),
  ],
  "admin.faults.crashMaster": [{ status: 202, body: {} }, (db) => db.admin.faults.crashMaster()],
  "admin.faults.loseMaster": [{ status: 202, body: {} }, (db) => db.admin.faults.loseMaster()],
  "admin.faults.restoreMember": [ok({}), (db) => db.admin.faults.restoreMember("node-0")],
  "admin.faults.partitionMember": [
    ok({}),
    (db) => db.admin.faults.partitionMember("replica-1", true),
  ],
  "admin.faults.stopReplica": [ok({}), (db) => db.admin.faults.stopReplica("replica-1")],
  "admin.faults.startReplica": [ok({}), (db) => db.admin.faults.startReplica("replica-1")],
  "admin.faults.delayReplica": [ok({}), (db) => db.admin.faults.delayReplica("replica-1", 5)],
  "admin.faults.rewindReplica": [ok({}), (db) => db.admin.faults.rewindReplica("replica-1", 0)],
  "admin.faults.disconnectReplica": [
    ok({}),
    (db) => db.admin.faults.disconnectReplica("replica-1"),
  ],
  "admin.faults.connectReplica": [ok({}), (db) => db.admin.faults.connectReplica("replica-1")],
  "admin.faults.crashReplica": [
    { status: 202, body: {} },
    (db) => db.admin.faults.crashReplica("replica-1"),
  ],
  "admin.faults.tamperReplica": [
    ok({}),
    (db) => db.admin.faults.tamperReplica("replica-1", "DELETE FROM t"),
  ],
  "admin.faults.setMessageFaults": [ok({}), (db) => db.admin.faults.setMessageFaults({})],
};

/** The public methods of an object's class, by the name a caller writes. */
function methods(object: object, prefix: string): string[] {
  const proto = Object.getPrototypeOf(object) as object;
  return Object.getOwnPropertyNames(proto)
    .filter((name) => typeof Object.getOwnPropertyDescriptor(proto, name)?.value === "function")
    .filter((name) => !NOT_ROUTES.has(name))
    .map((name) => `${prefix}${name}`);
}

/** The doc route a request went to: its path matched against each route's template. */
function routeOf(method: string, path: string, routes: string[]): string | undefined {
  const bare = path.split("?")[0] ?? path;
  return routes.find((route) => {
    const [m = "", template = ""] = route.split(" ");
    const pattern = template.replace(/\{\w+\}/g, "[^/]+");
    return m === method && new RegExp(`^${pattern}$`).test(bare);
  });
}

describe("the client covers docs/api.md", () => {
  const documented = docRoutes(api).map((r) => `${r.method} ${r.path}`);

  it("calls here every public method of the client, its admin plane and its fault routes", () => {
    const { client } = fakeClient([]);
    const all = [
      ...methods(client, ""),
      ...methods(client.admin, "admin."),
      ...methods(client.admin.faults, "admin.faults."),
    ];
    expect(all.sort()).toEqual(Object.keys(CALLS).sort());
  });

  it("has a method for every route of the doc but those it leaves out, and no method without one", async () => {
    const reached = new Map<string, string>();
    for (const [name, [answer, call]] of Object.entries(CALLS)) {
      const fake = fakeClient([answer]);
      await call(fake.client);
      expect(fake.sent, name).toHaveLength(1);
      const sent = fake.sent[0];
      const route = routeOf(sent?.method ?? "", sent?.path ?? "", documented);
      expect(
        route,
        `${name}: ${sent?.method} ${sent?.path} is no route of docs/api.md`,
      ).toBeDefined();
      reached.set(route ?? "", name);
    }
    const missing = documented.filter((r) => !reached.has(r) && NOT_IN_CLIENT[r] === undefined);
    expect(missing).toEqual([]);
    // A route left out must still be in the doc, and not have a method after all.
    for (const route of Object.keys(NOT_IN_CLIENT)) {
      if (!documented.includes(route)) continue;
      expect(reached.has(route), route).toBe(false);
    }
  });
});
