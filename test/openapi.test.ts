/// <reference types="vite/client" />
/**
 * GET /openapi.json: a valid OpenAPI 3.1 document (checked against the
 * specification's own schema by @hyperjump/json-schema), naming every route
 * and every error code docs/api.md names (read from the doc, so either side
 * drifting fails), and describing requests the server accepts and answers
 * the server gives.
 */
import { registerSchema, validate } from "@hyperjump/json-schema/openapi-3-1";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import api from "../docs/api.md?raw";
import { app } from "../workers/app";
import { docErrors, docRoutes } from "./api-doc";
import { ADMIN, call, DATA, freshCluster } from "./helpers";

type Schema = Record<string, unknown>;
interface Operation {
  operationId?: string;
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string; schema: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema; example?: unknown }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
interface Document {
  openapi: string;
  components: Schema & { securitySchemes: Record<string, Schema> };
  paths: Record<string, Record<string, Operation>>;
}

const OAS_31 = "https://spec.openapis.org/oas/3.1/schema-base";
let doc: Document;

beforeAll(async () => {
  const response = await exports.default.fetch(new Request("http://cluster.test/openapi.json"));
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  doc = (await response.json()) as Document;
});

const operations = () =>
  Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
  );

let schemaCount = 0;
/** Validates `value` against a schema of the document, its $refs resolved in the document. */
async function conforms(schema: Schema, value: unknown): Promise<boolean> {
  const uri = `https://cluster.test/schemas/${++schemaCount}`;
  const wrapped = {
    $schema: "https://spec.openapis.org/oas/3.1/dialect/base",
    ...schema,
    components: doc.components,
  };
  registerSchema(wrapped as Parameters<typeof registerSchema>[0], uri);
  return (await validate(uri, value as never)).valid;
}

describe("GET /openapi.json", () => {
  it("is public, and only GET and HEAD reach it", async () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    const head = await exports.default.fetch(
      new Request("http://cluster.test/openapi.json", { method: "HEAD" }),
    );
    expect(head.status).toBe(200);
    const post = await call("POST", "/openapi.json", { token: ADMIN, body: {} });
    expect(post.status).toBe(404);
    expect((post.body.error as { code: string }).code).toBe("NOT_FOUND");
  });

  it("is a valid OpenAPI 3.1 document, by the specification's schema", async () => {
    const output = await validate(OAS_31, doc as never);
    expect(output.valid, JSON.stringify(output).slice(0, 2000)).toBe(true);
    // The same check refuses a document that is not one.
    const { info: _, ...withoutInfo } = doc as unknown as Record<string, unknown>;
    expect((await validate(OAS_31, withoutInfo as never)).valid).toBe(false);
    const badRef = { ...doc, paths: { "/x": { get: { responses: { 200: { $ref: 7 } } } } } };
    expect((await validate(OAS_31, badRef as never)).valid).toBe(false);
  });

  /**
   * The routes the document must name: those of docs/api.md's HTTP planes, and of any
   * other section (libSQL's, a protocol with a spec of its own) once the document names
   * one of its routes, which it does when that module registers its paths.
   */
  function required() {
    const described = new Set(operations().map((o) => `${o.method} ${o.path}`));
    const routes = docRoutes(api);
    const sections = new Set(
      routes
        .filter((r) => PLANES.includes(r.section) || described.has(`${r.method} ${r.path}`))
        .map((r) => r.section),
    );
    return routes.filter((r) => sections.has(r.section));
  }
  const PLANES = ["Data plane", "Admin plane", "API description"];

  it("names every route of docs/api.md's planes, and no route the doc does not name", () => {
    const documented = required().map((r) => `${r.method} ${r.path}`);
    expect(documented.length).toBeGreaterThan(20);
    const described = operations().map((o) => `${o.method} ${o.path}`);
    expect(described.sort()).toEqual(documented.sort());
  });

  it("describes every route the app serves under those planes' prefixes", () => {
    const described = new Set(operations().map((o) => `${o.method} ${o.path}`));
    const prefix = (path: string) => path.split("/").slice(0, 3).join("/");
    const planes = new Set(required().map((r) => prefix(r.path)));
    const served = app.routes
      .filter((r) => r.method !== "ALL" && r.path !== "/" && planes.has(prefix(r.path)))
      .flatMap((r) => {
        const choice = /:(\w+)\{([a-z|]+)\}/.exec(r.path);
        const paths = choice
          ? (choice[2] ?? "").split("|").map((w) => r.path.replace(choice[0], w))
          : [r.path];
        return paths.map(
          (p) => `${r.method} ${p.replace(/:(\w+)/g, "{$1}").replace(/(.)\/$/, "$1")}`,
        );
      });
    expect(served.length).toBeGreaterThan(20);
    for (const route of served) expect(described, route).toContain(route);
  });

  it("gives each route the error body and codes of docs/api.md's table, at their statuses", () => {
    const table = docErrors(api).map((e) => `${e.status} ${e.code}`);
    expect(table.length).toBeGreaterThan(10);
    const described = new Set<string>();
    for (const { path, op } of operations()) {
      if (path.startsWith("/libsql/")) continue; // Hrana's error shape: the test below
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue;
        const schema = response.content?.["application/json"]?.schema as {
          properties: { error: { properties: { code: { enum: string[] } }; required: string[] } };
        };
        expect(schema.properties.error.required).toEqual(["code", "message"]);
        for (const code of schema.properties.error.properties.code.enum) {
          described.add(`${status} ${code}`);
        }
      }
    }
    expect([...described].sort()).toEqual([...new Set(table)].sort());
  });

  it("says which bearer token each route takes, as docs/api.md's Auth section does", () => {
    const schemes = doc.components.securitySchemes;
    expect(schemes.dataToken).toMatchObject({ type: "http", scheme: "bearer" });
    expect(schemes.adminToken).toMatchObject({ type: "http", scheme: "bearer" });
    for (const { path, op } of operations()) {
      if (path === "/openapi.json") {
        expect(op.security, "the description itself is public").toEqual([]);
        continue;
      }
      const names = (op.security ?? []).flatMap((s) => Object.keys(s)).sort();
      const data = path.startsWith("/v1/") || path.startsWith("/libsql/");
      expect(names, path).toEqual(data ? ["adminToken", "dataToken"] : ["adminToken"]);
    }
  });
});

describe("the libSQL routes", () => {
  const libsql = () => operations().filter((o) => o.path.startsWith("/libsql/"));

  it("are described, each error in Hrana's {message, code} shape", async () => {
    expect(
      libsql()
        .map((o) => `${o.method} ${o.path}`)
        .sort(),
    ).toEqual([
      "GET /libsql/{cluster}/v2",
      "GET /libsql/{cluster}/{consistency}/v2",
      "POST /libsql/{cluster}/v2/pipeline",
      "POST /libsql/{cluster}/{consistency}/v2/pipeline",
    ]);
    for (const { path, op } of libsql()) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue;
        const schema = response.content?.["application/json"]?.schema ?? {};
        expect(await conforms(schema, { message: "m", code: "URL_INVALID" }), path).toBe(true);
        expect(await conforms(schema, { error: { code: "X", message: "m" } }), path).toBe(false);
      }
    }
  });

  it("accept a pipeline the document says is valid, and answer as it says", async () => {
    const op = libsql().find((o) => o.op.operationId === "libsqlPipeline")?.op;
    const media = op?.requestBody?.content["application/json"];
    const body = {
      requests: [
        {
          type: "execute",
          stmt: { sql: "SELECT ? AS v", args: [{ type: "integer", value: "7" }] },
        },
        { type: "close" },
      ],
    };
    expect(await conforms(media?.schema ?? {}, body)).toBe(true);
    expect(await conforms(media?.schema ?? {}, { requests: [{ type: "nope" }] })).toBe(false);
    const res = await call("POST", `/libsql/${freshCluster("openapi-libsql")}/v2/pipeline`, {
      token: DATA,
      body,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const answer = op?.responses["200"]?.content?.["application/json"]?.schema ?? {};
    expect(await conforms(answer, res.body), JSON.stringify(res.body)).toBe(true);
    const failed = await call("POST", "/libsql/v2/pipeline", { token: DATA, body });
    expect(failed.status).toBe(400);
    const refusal = op?.responses["400"]?.content?.["application/json"]?.schema ?? {};
    expect(await conforms(refusal, failed.body), JSON.stringify(failed.body)).toBe(true);
  });
});

describe("what the document says is valid, the server accepts", () => {
  const cluster = freshCluster("openapi");
  /** The data routes that take a body (the change stream, a GET, has its own tests). */
  const data = () =>
    operations().filter((o) => o.path.startsWith("/v1/") && o.op.requestBody !== undefined);

  /** The route's path for `cluster`, other parameters from their schema's example. */
  function concrete(path: string, op: Operation): string {
    return path.replace(/\{(\w+)\}/g, (_, name: string) => {
      if (name === "cluster") return cluster;
      const parameter = op.parameters?.find((p) => p.name === name && p.in === "path");
      return String(parameter?.schema.example);
    });
  }

  it("answers each data route's example body with its documented success and body", async () => {
    // In the order a client would: create and write, insert rows, then read them.
    const order = ["exec", "insertRows", "query"];
    const routes = data().sort(
      (a, b) => order.indexOf(a.op.operationId ?? "") - order.indexOf(b.op.operationId ?? ""),
    );
    expect(routes.map((r) => r.op.operationId)).toEqual(order);
    for (const { path, op } of routes) {
      const media = op.requestBody?.content["application/json"];
      expect(media?.example, path).toBeDefined();
      expect(await conforms(media?.schema ?? {}, media?.example), path).toBe(true);
      const res = await call("POST", concrete(path, op), { token: DATA, body: media?.example });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const answer = op.responses["200"]?.content?.["application/json"]?.schema ?? {};
      expect(await conforms(answer, res.body), JSON.stringify(res.body)).toBe(true);
    }
    const read = await call("POST", `/v1/clusters/${cluster}/query`, {
      body: { sql: "SELECT v FROM kv ORDER BY k" },
    });
    expect(read.body.rows).toEqual([{ v: "1" }, { v: "2" }, { v: "world" }]);
  });

  it("refuses, as the document does, an example with a field it does not name", async () => {
    for (const { path, op } of data()) {
      const media = op.requestBody?.content["application/json"];
      const extra = { ...(media?.example as object), unnamed: 1 };
      expect(await conforms(media?.schema ?? {}, extra), path).toBe(false);
      const res = await call("POST", concrete(path, op), { token: DATA, body: extra });
      expect(res.status, path).toBe(400);
      expect((res.body.error as { code: string }).code).toBe("BAD_REQUEST");
    }
  });

  it("describes the answers of status, tunables, replicas and verify as the server gives them", async () => {
    const reads = operations().filter((o) =>
      ["status", "getTunables", "listReplicas", "verify"].includes(o.op.operationId ?? ""),
    );
    expect(reads).toHaveLength(4);
    for (const { method, path, op } of reads) {
      const res = await call(method, concrete(path, op), { token: ADMIN });
      expect(res.status, path).toBe(200);
      const answer = op.responses["200"]?.content?.["application/json"]?.schema ?? {};
      expect(await conforms(answer, res.body), `${path}: ${JSON.stringify(res.body)}`).toBe(true);
    }
  });
});
