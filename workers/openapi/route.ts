/**
 * Routes that describe themselves: `serve` registers a handler with Hono and
 * its OpenAPI operation in one call, so no route is served without being in
 * GET /openapi.json, and none is described without being served.
 *
 * Requests are not validated by @hono/zod-openapi's middleware: it would
 * refuse a body sent without `Content-Type: application/json` (what `curl -d`
 * sends) and answer in its own error shape, before the handler has checked
 * the cluster name. Handlers validate with the same zod schemas the document
 * is generated from (workers/middleware/json.ts), so the error body and its
 * order stay the front door's own.
 *
 * Another route module joins the document the same way: make it an
 * OpenAPIHono, register its routes with `serve` (or its `openAPIRegistry`),
 * and mount it with `app.route` in workers/app.ts, which copies its paths
 * under the mount prefix.
 */
import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import type { Handler } from "hono";

export type FrontDoor = { Bindings: Env };
export type Method = "get" | "post" | "patch" | "delete";
export type Operation = Omit<RouteConfig, "method" | "path">;

/**
 * The OpenAPI paths of a Hono path: `:name` becomes `{name}`, and a parameter
 * restricted to a few words (`:action{stop|start}`) becomes one path per word,
 * since each is a route of its own to a client.
 */
export function openApiPaths(honoPath: string): { path: string; word?: string }[] {
  const choice = /:(\w+)\{([a-z]+(?:\|[a-z]+)+)\}/.exec(honoPath);
  if (choice !== null) {
    return (choice[2] ?? "")
      .split("|")
      .flatMap((word) =>
        openApiPaths(honoPath.replace(choice[0], word)).map((p) => ({ ...p, word })),
      );
  }
  return [{ path: honoPath.replace(/:(\w+)/g, "{$1}").replace(/(.)\/$/, "$1") }];
}

const capitalised = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

export function serve<P extends string>(
  app: OpenAPIHono<FrontDoor>,
  method: Method,
  honoPath: P,
  operation: Operation,
  handler: Handler<FrontDoor, P>,
): void {
  for (const { path, word } of openApiPaths(honoPath)) {
    const operationId =
      operation.operationId === undefined || word === undefined
        ? operation.operationId
        : `${operation.operationId}${capitalised(word)}`;
    app.openAPIRegistry.registerPath({
      ...operation,
      ...(operationId === undefined ? {} : { operationId }),
      method,
      path,
    });
  }
  app.on(method.toUpperCase(), honoPath, handler);
}
