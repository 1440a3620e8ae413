/**
 * GET /admin/ui: the operators' dashboard (docs/operations.md, "The
 * dashboard"), its files served from the Worker's own bundle. The files hold
 * no cluster data and take no token; the page asks for the admin token and
 * sends it as a bearer header to the admin routes it polls, which check it as
 * they check any caller's (docs/security.md, "The dashboard").
 *
 * Served before the front door, as /openapi.json is (workers/openapi/document.ts):
 * every route of the app takes a token and a cluster name, and the bad-input
 * sweeps hold each of them to that. Any other method, and any other path
 * under /admin/ui, goes on to the app and gets its 404.
 */
import { ASSETS, type Asset } from "./assets";

/**
 * Only this origin's own files, no inline script or style, no eval, no
 * strings into HTML sinks (Trusted Types), no framing, no form submission:
 * what an injected string could use to read the token from sessionStorage
 * and send it elsewhere is shut.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join("; ");

function assetResponse(asset: Asset, head: boolean): Response {
  return new Response(head ? null : asset.body, {
    headers: {
      "content-type": asset.contentType,
      "content-security-policy": CONTENT_SECURITY_POLICY,
      "x-content-type-options": "nosniff",
      "x-frame-options": "DENY",
      "referrer-policy": "no-referrer",
      "cross-origin-opener-policy": "same-origin",
      "cross-origin-resource-policy": "same-origin",
      // A deploy changes the files; a few kilobytes are not worth a stale page.
      "cache-control": "no-cache",
    },
  });
}

/** The Worker: the dashboard's files (GET and HEAD), everything else to `next`. */
export function withDashboard(next: ExportedHandler<Env>): ExportedHandler<Env> {
  return {
    ...next,
    fetch(request, env, ctx) {
      const asset = ASSETS.get(new URL(request.url).pathname);
      const read = request.method === "GET" || request.method === "HEAD";
      if (asset !== undefined && read) return assetResponse(asset, request.method === "HEAD");
      if (next.fetch === undefined) return new Response("no handler", { status: 500 });
      return next.fetch(request, env, ctx);
    },
  };
}
