/**
 * Every route of the app (read from Hono's route table, so a new route is swept
 * too) against missing and wrong tokens, invalid and unknown cluster names, and
 * paths or methods that are no route. See bad-input-helpers.ts.
 */
import { listDurableObjectIds } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../workers/app";
import {
  type Case,
  expectError,
  isData,
  ROUTES,
  runCases,
  state,
  sweepCluster,
  url,
} from "./bad-input-helpers";
import { ADMIN, call, DATA } from "./helpers";

describe("the routes under test", () => {
  it("are read from the app, so a new route joins the route-wide sweeps below", () => {
    const names = ROUTES.map((r) => `${r.method} ${r.path}`);
    for (const route of [
      "POST /v1/clusters/:cluster/exec",
      "POST /v1/clusters/:cluster/tables/:table/rows",
      "POST /v1/clusters/:cluster/query",
      "GET /admin/clusters/:cluster/status",
      "GET /admin/clusters/:cluster/tunables",
      "PATCH /admin/clusters/:cluster/tunables",
      "POST /admin/clusters/:cluster/verify",
      "POST /admin/clusters/:cluster/master/crash",
      "GET /admin/clusters/:cluster/replicas",
      "POST /admin/clusters/:cluster/replicas",
      "DELETE /admin/clusters/:cluster/replicas/:id",
      "POST /admin/clusters/:cluster/replicas/:id/delay",
      "POST /admin/clusters/:cluster/replicas/:id/rewind",
      "POST /admin/clusters/:cluster/replicas/:id/crash",
      "POST /admin/clusters/:cluster/faults",
      "GET /metrics",
    ]) {
      expect(names).toContain(route);
    }
    expect(names.some((n) => n.includes(":action{disconnect|connect}"))).toBe(true);
    expect(names.some((n) => n.includes(":action{stop|start}"))).toBe(true);
    for (const route of ROUTES) {
      expect(url(route.path, "c1"), route.path).not.toMatch(/:\w/);
    }
  });
});

// ---------------------------------------------------------------------------
// Tokens

describe("every route refuses a missing or wrong token with 401", () => {
  const cluster = sweepCluster("auth");
  const tokens: { kind: string; headers: Record<string, string>; forData: boolean }[] = [
    { kind: "no Authorization header", headers: {}, forData: true },
    { kind: "an empty Authorization header", headers: { authorization: "" }, forData: true },
    { kind: "Bearer without a token", headers: { authorization: "Bearer " }, forData: true },
    { kind: "a wrong token", headers: { authorization: "Bearer wrong" }, forData: true },
    {
      kind: "the admin token cut by one character",
      headers: { authorization: `Bearer ${ADMIN.slice(0, -1)}` },
      forData: true,
    },
    {
      kind: "the admin token with one more character",
      headers: { authorization: `Bearer ${ADMIN}x` },
      forData: true,
    },
    {
      kind: "the admin token in upper case",
      headers: { authorization: `Bearer ${ADMIN.toUpperCase()}` },
      forData: true,
    },
    {
      kind: "the admin token as Basic auth",
      headers: { authorization: `Basic ${btoa(`admin:${ADMIN}`)}` },
      forData: true,
    },
    {
      kind: "the admin token without the Bearer scheme",
      headers: { authorization: ADMIN },
      forData: true,
    },
    {
      kind: "two tokens in one header",
      headers: { authorization: `Bearer ${DATA} ${ADMIN}` },
      forData: true,
    },
    {
      kind: "the admin token in another header",
      headers: { "x-api-key": ADMIN },
      forData: true,
    },
    // Data tokens are not enough for admin routes and /metrics; they are fine for data routes.
    { kind: "the data token", headers: { authorization: `Bearer ${DATA}` }, forData: false },
  ];

  const cases: Case[] = ROUTES.flatMap((route) =>
    tokens
      .filter((t) => t.forData || !isData(route.path))
      .map((t) => ({
        name: `${route.method} ${route.path} with ${t.kind}`,
        send: (c: string) =>
          call(route.method, url(route.path, c), {
            token: null,
            headers: t.headers,
            ...(route.method === "GET" ? {} : { body: {} }),
          }),
        status: 401,
        code: "UNAUTHORIZED",
      })),
  );
  runCases(cases, cluster);

  it("does not say whether a token was close, or which kind it was", async () => {
    const messages = new Set<string>();
    for (const t of tokens.filter(
      (x) => x.forData && x.headers.authorization?.startsWith("Bearer"),
    )) {
      const res = await call("POST", `/v1/clusters/${cluster.name}/query`, {
        token: null,
        headers: t.headers,
        body: { sql: "SELECT 1" },
      });
      expectError(res, 401, "UNAUTHORIZED");
      messages.add((res.body.error as { message: string }).message);
    }
    // "Bearer " alone reads as no token; every other wrong token gets one and the same answer.
    expect(messages.size).toBeLessThanOrEqual(2);
  });

  it("accepts the admin token on the data routes", async () => {
    const res = await call("POST", `/v1/clusters/${cluster.name}/query`, {
      token: ADMIN,
      body: { sql: "SELECT count(*) AS n FROM t" },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.rows).toEqual([{ n: 3 }]);
  });
});

// ---------------------------------------------------------------------------
// Cluster names

describe("every route refuses an invalid or unknown cluster", () => {
  const cluster = sweepCluster("names");
  const invalid = [
    "Main",
    "a".repeat(64),
    "-main",
    "_main",
    "main!",
    "ma in",
    "main;drop",
    "main'",
    "main.x",
    "mäin",
    "main\u202e",
  ];
  const cases: Case[] = ROUTES.flatMap((route) =>
    invalid.map((name) => ({
      name: `${route.method} ${route.path} on cluster ${JSON.stringify(name)}`,
      send: () =>
        call(route.method, url(route.path, name), {
          ...(route.method === "GET" ? {} : { body: {} }),
          token: ADMIN,
        }),
      status: 400,
      code: "BAD_REQUEST",
    })),
  );
  runCases(cases, cluster);

  // With CLUSTERS set to a list, any other name is 404 before any object is touched.
  it.each(ROUTES)(
    "answers $method $path on a cluster outside CLUSTERS with 404 and creates no object",
    async ({ method, path }) => {
      const restricted = { ...env, CLUSTERS: `main, ${cluster.name}` };
      const nodes = (await listDurableObjectIds(env.NODE)).length;
      const response = await app.request(
        `http://cluster.test${url(path, "elsewhere")}`,
        {
          method,
          headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
          ...(method === "GET" ? {} : { body: "{}" }),
        },
        restricted,
      );
      expectError(
        {
          status: response.status,
          headers: response.headers,
          body: (await response.json()) as Record<string, unknown>,
        },
        404,
        "NOT_FOUND",
      );
      const listed = await app.request(
        `http://cluster.test/admin/clusters/${cluster.name}/status`,
        { headers: { authorization: `Bearer ${ADMIN}` } },
        restricted,
      );
      expect(listed.status).toBe(200);
      expect(await state(cluster.name)).toEqual(cluster.before());
      expect((await listDurableObjectIds(env.NODE)).length).toBe(nodes);
    },
  );
});

describe("the data routes answer unknown methods and paths with 404", () => {
  const cluster = sweepCluster("paths");
  const missing = (method: string, path: (c: string) => string): Case => ({
    name: `${method} ${path("{cluster}")}`,
    send: (c) => call(method, path(c), { token: ADMIN, ...(method === "GET" ? {} : { body: {} }) }),
    status: 404,
    code: "NOT_FOUND",
  });
  runCases(
    [
      missing("GET", (c) => `/v1/clusters/${c}/exec`),
      missing("PUT", (c) => `/v1/clusters/${c}/exec`),
      missing("DELETE", (c) => `/v1/clusters/${c}/query`),
      missing("GET", (c) => `/v1/clusters/${c}/tables/t/rows`),
      missing("POST", (c) => `/v1/clusters/${c}/tables/t`),
      missing("POST", (c) => `/v1/clusters/${c}/tables/t/rows/extra`),
      missing("POST", (c) => `/v1/clusters/${c}`),
      missing("POST", () => "/v2/clusters/main/exec"),
      missing("GET", () => "/admin"),
      missing("GET", () => "/metrics/extra"),
    ],
    cluster,
  );
});
