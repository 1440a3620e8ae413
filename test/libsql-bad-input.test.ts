/**
 * The libSQL endpoint against bad input: every route it serves (read from the
 * app's table) with missing and wrong tokens and bad cluster names, and the
 * pipeline with malformed bodies. Every answer is libSQL's error shape,
 * `{message, code}` as exactly `application/json` (the only form
 * `@libsql/client` reads a message from), never a 500, and nothing is written.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../workers/app";
import { ADMIN, call, DATA, freshCluster } from "./helpers";

const LIBSQL_ROUTES = app.routes
  .filter((r) => r.path.startsWith("/libsql/:cluster") && r.method !== "ALL")
  .map((r) => ({ method: r.method, path: r.path }));

async function send(method: string, path: string, headers: Record<string, string>, body?: string) {
  const response = await exports.default.fetch(
    new Request(`http://cluster.test${path}`, { method, headers, body }),
  );
  const text = await response.text();
  return { status: response.status, type: response.headers.get("content-type"), text };
}

function expectHranaError(
  res: { status: number; type: string | null; text: string },
  status: number,
  code: string,
) {
  expect(res.status, res.text).toBe(status);
  expect(res.type).toBe("application/json");
  const body = JSON.parse(res.text) as Record<string, unknown>;
  expect(Object.keys(body).sort(), res.text).toEqual(["code", "message"]);
  expect(body.code, res.text).toBe(code);
  expect(String(body.message)).not.toMatch(/\n\s+at\s|internal error/i);
}

const concrete = (path: string, cluster: string) =>
  path.replace(":cluster", cluster).replace(":consistency", "strong");

describe("libSQL routes", () => {
  it("are the version check and the pipeline, with and without a consistency", () => {
    expect(LIBSQL_ROUTES.map((r) => `${r.method} ${r.path}`).sort()).toEqual([
      "GET /libsql/:cluster/:consistency/v2",
      "GET /libsql/:cluster/v2",
      "POST /libsql/:cluster/:consistency/v2/pipeline",
      "POST /libsql/:cluster/v2/pipeline",
    ]);
  });

  const tokens: [string, Record<string, string>][] = [
    ["no Authorization header", {}],
    ["a wrong token", { authorization: "Bearer wrong" }],
    ["the admin token cut by one character", { authorization: `Bearer ${ADMIN.slice(0, -1)}` }],
    ["Basic auth", { authorization: `Basic ${btoa(`x:${DATA}`)}` }],
  ];
  for (const route of LIBSQL_ROUTES) {
    it.each(tokens)(
      `${route.method} ${route.path} with %s: 401, nothing run`,
      async (_, headers) => {
        const c = freshCluster("hrana-auth");
        const body = JSON.stringify({
          requests: [{ type: "execute", stmt: { sql: "CREATE TABLE x (a)" } }, { type: "close" }],
        });
        expectHranaError(
          await send(
            route.method,
            concrete(route.path, c),
            headers,
            route.method === "POST" ? body : undefined,
          ),
          401,
          "UNAUTHORIZED",
        );
      },
    );
    it(`${route.method} ${route.path} with a bad cluster name: 400`, async () => {
      const headers = { authorization: `Bearer ${DATA}` };
      const res = await send(
        route.method,
        concrete(route.path, "Bad.Name"),
        headers,
        route.method === "POST" ? '{"requests":[]}' : undefined,
      );
      expectHranaError(res, 400, "BAD_REQUEST");
    });
  }
});

describe("malformed pipelines", () => {
  const bodies: [string, string, string][] = [
    ["no body", "", "BAD_REQUEST"],
    ["not JSON", "{", "BAD_REQUEST"],
    ["an array", "[]", "PROTO_ERROR"],
    ["requests missing", "{}", "PROTO_ERROR"],
    ["an unknown request type", '{"requests":[{"type":"open_cursor"}]}', "PROTO_ERROR"],
    ["execute without stmt", '{"requests":[{"type":"execute"}]}', "PROTO_ERROR"],
    [
      "a value of unknown type",
      '{"requests":[{"type":"execute","stmt":{"sql":"SELECT ?","args":[{"type":"date","value":"x"}]}}]}',
      "PROTO_ERROR",
    ],
    [
      "an integer value that is a number",
      '{"requests":[{"type":"execute","stmt":{"sql":"SELECT ?","args":[{"type":"integer","value":1}]}}]}',
      "PROTO_ERROR",
    ],
    ["a baton that is a number", '{"baton":5,"requests":[]}', "PROTO_ERROR"],
    [
      "a forged baton",
      `{"baton":"${"a".repeat(64)}.1.${"A".repeat(43)}","requests":[{"type":"close"}]}`,
      "BATON_INVALID",
    ],
    ["a baton of the wrong form", '{"baton":"x","requests":[{"type":"close"}]}', "BATON_INVALID"],
    [
      "2,000 requests",
      JSON.stringify({ requests: Array.from({ length: 2000 }, () => ({ type: "close" })) }),
      "PROTO_ERROR",
    ],
  ];
  it.each(bodies)("%s: 400 %s, nothing run", async (_, body, code) => {
    const c = freshCluster("hrana-body");
    const res = await send(
      "POST",
      `/libsql/${c}/v2/pipeline`,
      { authorization: `Bearer ${DATA}` },
      body,
    );
    expectHranaError(res, 400, code);
  });

  it("a request that fails to translate is that request's error only", async () => {
    const c = freshCluster("hrana-partial");
    const r = await call<{ results: { type: string; error?: { code: string } }[] }>(
      "POST",
      `/libsql/${c}/v2/pipeline`,
      {
        body: {
          requests: [
            { type: "execute", stmt: { sql_id: 9 } },
            {
              type: "execute",
              stmt: { sql: "SELECT :a", named_args: [{ name: "b", value: { type: "null" } }] },
            },
            { type: "execute", stmt: { sql: "SELECT ?", args: [{ type: "blob", base64: "@@" }] } },
            { type: "describe", sql: "SELECT 1" },
            {
              type: "batch",
              batch: { steps: [{ stmt: { sql: "SELECT 1" }, condition: { type: "ok", step: 0 } }] },
            },
            { type: "execute", stmt: { sql: "SELECT 1" } },
            { type: "close" },
            { type: "execute", stmt: { sql: "SELECT 2" } },
          ],
        },
      },
    );
    expect(r.status).toBe(200);
    expect(r.body.results.map((x) => x.error?.code ?? x.type)).toEqual([
      "SQL_NOT_FOUND",
      "ARGS_INVALID",
      "BAD_REQUEST",
      "NOT_SUPPORTED",
      "BAD_REQUEST",
      "ok",
      "ok",
      "STREAM_CLOSED",
    ]);
  });

  it("a URL that lost its trailing slash says so, for every method", async () => {
    for (const path of ["/libsql/v2/pipeline", "/libsql/v2", "/libsql/v2/cursor"]) {
      const res = await send("POST", path, { authorization: `Bearer ${DATA}` }, '{"requests":[]}');
      expectHranaError(res, 400, "URL_INVALID");
      expect(res.text).toMatch(/must end with a slash/);
    }
    const other = await send("GET", "/libsql/main/v3-protobuf", {
      authorization: `Bearer ${DATA}`,
    });
    expectHranaError(other, 404, "NOT_FOUND");
  });
});
