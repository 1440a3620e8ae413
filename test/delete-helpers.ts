/** What the tests of DELETE /admin/clusters/{cluster} share. */
import { env } from "cloudflare:test";
import { call, exec } from "./helpers";

/** DELETE with `?confirm=`, the name itself unless told otherwise (null: none at all). */
export const deleteByName = (cluster: string, confirm: string | null = cluster) =>
  call<{ cluster: string; members: string[] }>(
    "DELETE",
    `/admin/clusters/${cluster}${confirm === null ? "" : `?confirm=${encodeURIComponent(confirm)}`}`,
  );

/** Writes to the name until one is answered (a new cluster may take a moment to start). */
export async function writeEventually(cluster: string, sql: string) {
  let last = await exec(cluster, [{ sql }]);
  for (let i = 0; i < 30 && last.status !== 200; i++) {
    await new Promise((r) => setTimeout(r, 200));
    last = await exec(cluster, [{ sql }]);
  }
  return last;
}

/**
 * The test env, but the RPC `method` of the node named `node` (`cluster:member`)
 * first calls `reached` and then waits for `gate`: a member in a far region
 * that answers late, at a moment the test chooses.
 */
export function envHolding(
  node: string,
  method: string,
  gate: Promise<void>,
  reached: () => void = () => {},
): Env {
  const real = env.NODE as unknown as DurableObjectNamespace;
  const names = new WeakMap<DurableObjectId, string>();
  const ns = {
    idFromName(name: string) {
      const id = real.idFromName(name);
      names.set(id, name);
      return id;
    },
    get(id: DurableObjectId, options?: DurableObjectNamespaceGetDurableObjectOptions) {
      const stub = real.get(id, options) as unknown as Record<string, (...a: unknown[]) => unknown>;
      if (names.get(id) !== node) return stub;
      return new Proxy(stub, {
        get(target, prop) {
          if (prop === method) {
            return async (...args: unknown[]) => {
              reached();
              await gate;
              return target[method]?.(...args);
            };
          }
          const value = target[prop as string];
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    },
  };
  return { ...(env as unknown as Record<string, unknown>), NODE: ns } as unknown as Env;
}
