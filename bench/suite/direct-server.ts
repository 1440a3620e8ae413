/**
 * The bench Worker served by workerd alone. `wrangler dev` puts a proxy Worker
 * in a second workerd process in front of the user's (for reloads and the
 * inspector): every request crosses it, and on these machines it caps a no-op
 * route near 350 requests/s, so an HTTP number through it measures the proxy.
 * Here Miniflare (the library wrangler dev itself drives) starts the same
 * bundle with the options wrangler derives from the same configuration, and
 * its socket is the Worker's own.
 */

/** wrangler's own Miniflare (and so its workerd): the runtime `wrangler dev` measures with. */
async function wranglersMiniflare(): Promise<typeof import("miniflare")> {
  const path = createRequire(import.meta.resolve("wrangler")).resolve("miniflare");
  return import(pathToFileURL(path).href);
}
import { rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { pathToFileURL } from "node:url";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import type { DevServer } from "../../test/e2e/dev-server.ts";
import { bundleBench } from "./server.ts";
import { type BenchState, benchState, makeStateDir } from "./state-dir.ts";

export async function startDirectBenchServer(
  root = ".",
  state: BenchState = benchState(),
): Promise<Omit<DevServer, "pid"> & { bundle: string }> {
  const built = bundleBench(root);
  // The same kind of storage as wrangler dev's serving gets (state-dir.ts).
  const stateDir = makeStateDir(state);
  const cleanUp = () => {
    rmSync(built.dir, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  };
  try {
    // Bindings, Durable Object classes (SQLite-backed), compatibility: as wrangler reads them.
    // The bundle is one module: no rules for other kinds of file.
    const { modulesRules: _rules, ...workerOptions } = unstable_getMiniflareWorkerOptions(
      built.config,
    ).workerOptions;
    const { Miniflare, convertV4MiniflareOptions } = await wranglersMiniflare();
    const mf = new Miniflare(
      convertV4MiniflareOptions({
        host: "127.0.0.1",
        port: 0,
        resourcePersistencePath: stateDir,
        workers: [
          {
            ...workerOptions,
            name: "bench",
            modules: true,
            scriptPath: built.bundle,
            modulesRoot: dirname(built.bundle),
          },
        ],
      }),
    );
    const url = await mf.ready;
    return {
      url: url.href.replace(/\/$/, ""),
      port: Number(url.port),
      bundle: built.bundle,
      async stop() {
        await mf.dispose();
        cleanUp();
      },
    };
  } catch (error) {
    cleanUp();
    throw error;
  }
}
