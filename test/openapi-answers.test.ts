/**
 * Every admin-plane, fault and /metrics route of GET /openapi.json, called for
 * real: each answer must come with a status the document gives for that route,
 * and a JSON body must validate against the schema documented for that status
 * (a text body must have a documented media type). The table below must have a
 * call for every such route the document names, so a route cannot be described
 * without its answers being checked against what the server sends. The data
 * routes' answers are checked from the document's own examples in
 * test/openapi.test.ts.
 */
import { registerSchema, validate } from "@hyperjump/json-schema/openapi-3-1";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, exec, freshCluster, patchTunables } from "./helpers";

type Schema = Record<string, unknown>;
interface Operation {
  tags?: string[];
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
interface Document {
  components: Schema;
  paths: Record<string, Record<string, Operation>>;
}

let doc: Document;
let schemaCount = 0;

async function conforms(schema: Schema, value: unknown): Promise<boolean> {
  const uri = `https://cluster.test/answer-schemas/${++schemaCount}`;
  registerSchema(
    {
      $schema: "https://spec.openapis.org/oas/3.1/dialect/base",
      ...schema,
      components: doc.components,
    } as Parameters<typeof registerSchema>[0],
    uri,
  );
  return (await validate(uri, value as never)).valid;
}

/** One real call: the route as the document names it, the URL, the body, the status expected. */
interface Call {
  route: string;
  url: string;
  body?: unknown;
  dump?: string;
  status: number;
}

const DUMP = "BEGIN TRANSACTION;\nCREATE TABLE t(a);\nINSERT INTO t VALUES(1);\nCOMMIT;\n";

/** The calls, in an order that works on one cluster: settings first, the master's crash last. */
function calls(a: string, promoted: string, lost: string, empty: string): Call[] {
  const admin = (c: string) => `/admin/clusters/${c}`;
  const r = "/admin/clusters/{cluster}";
  return [
    { route: `GET ${r}/status`, url: `${admin(a)}/status`, status: 200 },
    { route: `GET ${r}/tunables`, url: `${admin(a)}/tunables`, status: 200 },
    {
      route: `PATCH ${r}/tunables`,
      url: `${admin(a)}/tunables`,
      body: { debug_fault_injection: true },
      status: 200,
    },
    { route: `POST ${r}/verify`, url: `${admin(a)}/verify`, status: 200 },
    { route: `GET ${r}/replicas`, url: `${admin(a)}/replicas`, status: 200 },
    { route: `POST ${r}/replicas`, url: `${admin(a)}/replicas`, body: {}, status: 201 },
    { route: `DELETE ${r}/replicas/{id}`, url: `${admin(a)}/replicas/replica-5`, status: 200 },
    { route: `POST ${r}/faults`, url: `${admin(a)}/faults`, body: {}, status: 200 },
    {
      route: `POST ${r}/replicas/{id}/delay`,
      url: `${admin(a)}/replicas/replica-1/delay`,
      body: { ms: 0 },
      status: 200,
    },
    {
      route: `POST ${r}/replicas/{id}/tamper`,
      url: `${admin(a)}/replicas/replica-3/tamper`,
      body: { sql: "SELECT 1" },
      status: 200,
    },
    {
      route: `POST ${r}/replicas/{id}/rewind`,
      url: `${admin(a)}/replicas/replica-1/rewind`,
      body: { lsn: 0 },
      status: 200,
    },
    ...["disconnect", "connect", "stop", "start"].map((action) => ({
      route: `POST ${r}/replicas/{id}/${action}`,
      url: `${admin(a)}/replicas/replica-2/${action}`,
      status: 200,
    })),
    {
      route: `POST ${r}/members/{id}/partition`,
      url: `${admin(a)}/members/replica-3/partition`,
      body: { partitioned: false },
      status: 200,
    },
    {
      route: `POST ${r}/replicas/{id}/crash`,
      url: `${admin(a)}/replicas/replica-1/crash`,
      status: 202,
    },
    { route: `GET ${r}/export`, url: `${admin(a)}/export`, status: 200 },
    { route: "GET /metrics", url: `/metrics?cluster=${a}`, status: 200 },
    { route: `POST ${r}/master/crash`, url: `${admin(a)}/master/crash`, status: 202 },
    {
      route: `POST ${r}/promote`,
      url: `${admin(promoted)}/promote`,
      body: { replica: "replica-1" },
      status: 200,
    },
    { route: `POST ${r}/master/lose`, url: `${admin(lost)}/master/lose`, status: 202 },
    {
      route: `POST ${r}/members/{id}/restore`,
      url: `${admin(lost)}/members/node-0/restore`,
      status: 200,
    },
    { route: `POST ${r}/import`, url: `${admin(empty)}/import`, dump: DUMP, status: 200 },
    { route: `DELETE ${r}`, url: `${admin(empty)}?confirm=${empty}`, status: 200 },
  ];
}

async function send(
  method: string,
  url: string,
  body: unknown,
  dump?: string,
): Promise<{ status: number; type: string; text: string }> {
  const headers: Record<string, string> = { authorization: `Bearer ${ADMIN}` };
  let payload: string | undefined;
  if (dump !== undefined) {
    headers["content-type"] = "application/sql; charset=utf-8";
    payload = dump;
  } else if (body !== undefined) {
    headers["content-type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const res = await exports.default.fetch(
    new Request(`http://cluster.test${url}`, { method, headers, body: payload }),
  );
  return {
    status: res.status,
    type: res.headers.get("content-type") ?? "",
    text: await res.text(),
  };
}

function operation(route: string): Operation | undefined {
  const [method = "", path = ""] = route.split(" ");
  return doc.paths[path]?.[method.toLowerCase()];
}

/** Whether the answer is one the document gives for the route: its status, media type and body. */
async function documented(route: string, answer: Awaited<ReturnType<typeof send>>) {
  const response = operation(route)?.responses[String(answer.status)];
  if (response === undefined) return `${answer.status} is not a documented answer`;
  const media = Object.keys(response.content ?? {});
  const type = media.find((m) => answer.type.startsWith(m.split(";")[0] ?? m));
  if (type === undefined) return `${answer.type} is not among ${media.join(", ")}`;
  if (!type.startsWith("application/json")) return null;
  const schema = response.content?.[type]?.schema ?? {};
  return (await conforms(schema, JSON.parse(answer.text))) ? null : "the body does not validate";
}

/** The routes of these planes the document names, as `METHOD /path`. */
function describedRoutes(): string[] {
  return Object.entries(doc.paths)
    .filter(([path]) => path.startsWith("/admin/") || path === "/metrics")
    .flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`));
}

beforeAll(async () => {
  const res = await exports.default.fetch(new Request("http://cluster.test/openapi.json"));
  doc = (await res.json()) as Document;
});

describe("every admin, fault and metrics route answers as the document says", () => {
  const a = freshCluster("oas-answers");
  const promoted = freshCluster("oas-promote");
  const lost = freshCluster("oas-lost");
  const empty = freshCluster("oas-import");

  it("has a call here for every such route the document names", () => {
    const routes = calls(a, promoted, lost, empty).map((c) => c.route);
    expect(routes.length).toBeGreaterThan(20);
    expect([...new Set(routes)].sort()).toEqual(describedRoutes().sort());
  });

  it("answers each call with a documented status and a body that validates", async () => {
    expect(
      (await exec(a, [{ sql: "CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)" }])).status,
    ).toBe(200);
    expect((await exec(promoted, [{ sql: "CREATE TABLE t (v TEXT)" }])).status).toBe(200);
    expect((await patchTunables(lost, { debug_fault_injection: true })).status).toBe(200);
    const wrong: string[] = [];
    for (const call of calls(a, promoted, lost, empty)) {
      const answer = await send(call.route.split(" ")[0] ?? "", call.url, call.body, call.dump);
      const problem =
        answer.status === call.status
          ? await documented(call.route, answer)
          : `expected ${call.status}`;
      if (problem !== null)
        wrong.push(`${call.route} ${answer.status}: ${problem}: ${answer.text.slice(0, 300)}`);
    }
    expect(wrong).toEqual([]);
  });

  it("answers each route's refusals with a documented status and error body", async () => {
    const off = freshCluster("oas-faults-off");
    expect((await exec(off, [{ sql: "CREATE TABLE t (v TEXT)" }])).status).toBe(200);
    const wrong: string[] = [];
    for (const call of calls(a, promoted, lost, empty)) {
      const method = call.route.split(" ")[0] ?? "";
      // A cluster name no route takes.
      const bad = call.url.replace(/clusters\/[^/]+|cluster=[^&]+/, (m) =>
        m.startsWith("cluster=") ? "cluster=Not!A!Name" : "clusters/Not!A!Name",
      );
      const probes = [send(method, bad, call.body, call.dump)];
      // A fault route while fault injection is off on the cluster: 403.
      if (operation(call.route)?.tags?.includes("faults")) {
        const url = call.url.replace(/clusters\/[^/]+/, `clusters/${off}`);
        probes.push(send(method, url, call.body, call.dump));
      }
      for (const answer of await Promise.all(probes)) {
        const problem = answer.status >= 400 ? await documented(call.route, answer) : "not refused";
        if (problem !== null)
          wrong.push(`${call.route} ${answer.status}: ${problem}: ${answer.text.slice(0, 300)}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
