/// <reference types="vite/client" />
/**
 * GET /admin/ui: the dashboard's files are served from the Worker with their
 * content types and a Content-Security-Policy, hold no cluster data (the same
 * bytes with or without a token), and every route the page polls refuses a
 * caller without the admin token. test/e2e/dashboard.e2e.test.ts drives the
 * page itself in Chromium.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import security from "../docs/security.md?raw";
import { ASSETS, DASHBOARD_PATH } from "../workers/dashboard/assets";
import { CONTENT_SECURITY_POLICY } from "../workers/dashboard/serve";
import { ADMIN, call, DATA, exec, freshCluster } from "./helpers";

async function get(path: string, init: RequestInit = {}) {
  const response = await exports.default.fetch(new Request(`http://cluster.test${path}`, init));
  return { response, text: await response.text() };
}

const TYPES = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  html: "text/html; charset=utf-8",
  svg: "image/svg+xml; charset=utf-8",
};

describe("GET /admin/ui", () => {
  it("serves the page at /admin/ui and /admin/ui/, with its policy and no inline code", async () => {
    for (const path of [DASHBOARD_PATH, `${DASHBOARD_PATH}/`]) {
      const { response, text } = await get(path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get("content-type")).toBe(TYPES.html);
      expect(response.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY);
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("referrer-policy")).toBe("no-referrer");
      expect(text).toContain('<script type="module" src="/admin/ui/app.js"></script>');
      // The policy forbids inline script and style; the page must not need them.
      for (const tag of text.matchAll(/<script\b[^>]*>/g)) expect(tag[0]).toMatch(/\ssrc="/);
      expect(text).not.toMatch(/<style\b|\sstyle="|\son[a-z]+="/);
    }
    expect(CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
    expect(CONTENT_SECURITY_POLICY).toContain("connect-src 'self'");
    expect(CONTENT_SECURITY_POLICY).toContain("frame-ancestors 'none'");
    expect(CONTENT_SECURITY_POLICY).not.toContain("unsafe");
    // docs/security.md prints the policy; it must be the one served.
    const printed = /```text\nContent-Security-Policy: ([^`]+)```/.exec(security)?.[1] ?? "";
    expect(printed.replace(/\s+/g, " ").trim()).toBe(CONTENT_SECURITY_POLICY);
  });

  it("serves every file the page and its modules load, each with its content type", async () => {
    const page = (await get(DASHBOARD_PATH)).text;
    const wanted = new Set(
      [...page.matchAll(/(?:src|href)="(\/admin\/ui\/[^"]+)"/g)].map((m) => m[1] ?? ""),
    );
    for (const [path, asset] of ASSETS) {
      for (const m of asset.body.matchAll(/^import [^;]*?from "\.\/([\w-]+\.js)";$/gms)) {
        wanted.add(`${DASHBOARD_PATH}/${m[1]}`);
      }
      if (path.endsWith(".js")) expect(asset.contentType).toBe(TYPES.js);
    }
    expect(wanted.size).toBeGreaterThanOrEqual(8);
    for (const path of wanted) {
      const { response, text } = await get(path);
      expect(response.status, path).toBe(200);
      const extension = path.split(".").pop() as keyof typeof TYPES;
      expect(response.headers.get("content-type"), path).toBe(TYPES[extension]);
      expect(response.headers.get("content-security-policy"), path).toBe(CONTENT_SECURITY_POLICY);
      expect(text, path).toBe(ASSETS.get(path)?.body);
    }
  });

  it("holds no cluster data: the same bytes with a token, without one, and after writes", async () => {
    const cluster = freshCluster("dashboard");
    expect((await exec(cluster, [{ sql: "CREATE TABLE t (v)" }])).status).toBe(200);
    for (const path of ASSETS.keys()) {
      const anonymous = await get(path);
      const withToken = await get(path, { headers: { authorization: `Bearer ${ADMIN}` } });
      expect(anonymous.text, path).toBe(withToken.text);
      expect(anonymous.text, path).not.toContain(cluster);
      expect(anonymous.text, path).not.toMatch(/replica-\d|node-\d/);
    }
  });

  it("answers HEAD without a body; other methods and paths under it are the app's 404", async () => {
    const head = await get(DASHBOARD_PATH, { method: "HEAD" });
    expect(head.response.status).toBe(200);
    expect(head.text).toBe("");
    for (const [method, path] of [
      ["POST", DASHBOARD_PATH],
      ["GET", `${DASHBOARD_PATH}/nope.js`],
      ["GET", `${DASHBOARD_PATH}/index.html`],
    ] as const) {
      const res = await call(method, path, { token: null });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect((res.body.error as { code: string }).code).toBe("NOT_FOUND");
    }
  });
});

describe("the routes the dashboard polls", () => {
  const cluster = freshCluster("dashboard-auth");
  /** The paths api.js builds, read from its text so a new route there is checked too. */
  const api = ASSETS.get(`${DASHBOARD_PATH}/api.js`)?.body ?? "";
  const paths = [...api.matchAll(/`(\/[^`]+)`/g)].map((m) =>
    (m[1] ?? "").replace(/\$\{[^}]+\}/g, cluster),
  );

  it("are the status route and /metrics", () => {
    expect(paths.sort()).toEqual([
      `/admin/clusters/${cluster}/status`,
      `/metrics?cluster=${cluster}`,
    ]);
  });

  it("refuse a caller without the admin token, and answer one with it", async () => {
    for (const path of paths) {
      for (const token of [null, DATA, "not-a-token"]) {
        const res = await call("GET", path, { token });
        expect(res.status, `${path} with ${token}`).toBe(401);
        expect((res.body.error as { code: string }).code).toBe("UNAUTHORIZED");
      }
      const ok = await exports.default.fetch(
        new Request(`http://cluster.test${path}`, {
          headers: { authorization: `Bearer ${ADMIN}` },
        }),
      );
      expect(ok.status, path).toBe(200);
    }
  });
});
