/**
 * Starts the bench Worker locally for a whole benchmark run. The code is
 * bundled once into a temporary directory and `wrangler dev` serves that
 * bundle: it watches only its own entry point, so edits to the source tree
 * during a long run neither restart the Worker mid-point nor change the code
 * being measured.
 */
import { execFileSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DevServer, startDevServer } from "../../test/e2e/dev-server.ts";
import { type BenchState, benchState, makeStateDir } from "./state-dir.ts";

export const BENCH_CONFIG = "wrangler.bench.toml";

/**
 * wrangler dev streams a trace of every invocation (each DO RPC call included)
 * to its local observability collector, a Worker on the same thread. Under
 * sustained load that stream's backlog takes most of the CPU: replicated
 * throughput fell by half within 20 s and the last commits of a run waited
 * seconds behind it (docs/benchmarks.md). The benchmark measures the database,
 * not the dev tooling, so it runs with the collector off; set
 * X_LOCAL_OBSERVABILITY=true in the environment to measure with it.
 */
export const BENCH_DEV_ENV = {
  X_LOCAL_OBSERVABILITY: process.env.X_LOCAL_OBSERVABILITY ?? "false",
};

/** The bench configuration pointed at a prebuilt bundle (top-level keys precede any table). */
export function bundledConfig(config: string, bundle: string): string {
  const lines = config.split("\n");
  const main = lines.findIndex((line) => /^main\s*=/.test(line));
  if (main < 0) throw new Error(`${BENCH_CONFIG} has no main`);
  lines.splice(main, 1, `main = ${JSON.stringify(bundle)}`, "no_bundle = true");
  return lines.join("\n");
}

/**
 * wrangler dev maps every logged error's stack through the bundle's source map
 * (2.7 MB), re-reading it each time, on the one thread that also carries the
 * Worker's traffic: a burst of errors (a lost master's refused calls) froze the
 * local runtime for seconds. The bench reads no stacks, so the map goes.
 */
function dropSourceMap(bundleDir: string): void {
  const worker = join(bundleDir, "worker.js");
  const code = readFileSync(worker, "utf8");
  writeFileSync(worker, code.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, "\n"));
  rmSync(`${worker}.map`, { force: true });
}

/** A bench build in a temporary directory: the bundle and a configuration serving it. */
export interface BenchBundle {
  dir: string;
  config: string;
  bundle: string;
}

/** Bundles `root`'s bench Worker once (wrangler's own build), with its development tokens. */
export function bundleBench(root = "."): BenchBundle {
  const dir = mkdtempSync(join(tmpdir(), "dosql-bench-"));
  try {
    execFileSync(
      "npx",
      [
        "wrangler",
        "deploy",
        "--dry-run",
        "--config",
        BENCH_CONFIG,
        "--outdir",
        join(dir, "bundle"),
      ],
      { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "true" } },
    );
    dropSourceMap(join(dir, "bundle"));
    const config = join(dir, "wrangler.toml");
    const source = readFileSync(join(root, BENCH_CONFIG), "utf8");
    writeFileSync(config, bundledConfig(source, "bundle/worker.js"));
    // The development tokens are read from beside the configuration.
    const vars = join(root, ".dev.vars");
    if (existsSync(vars)) copyFileSync(vars, join(dir, ".dev.vars"));
    return { dir, config, bundle: join(dir, "bundle", "worker.js") };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * `root`: the checkout to build (another build of the project, for side-by-side
 * runs); `persistTo`: a state directory that outlives the server (dev-server.ts),
 * else a new one of kind `state` (state-dir.ts), removed when the server stops;
 * `inspectorPort`: where the Worker's inspector listens (bench:profile).
 */
export async function startBenchServer(
  root = ".",
  persistTo?: string,
  inspectorPort = 0,
  state: BenchState = benchState(),
): Promise<DevServer & { bundle: string }> {
  const built = bundleBench(root);
  const ownState = persistTo === undefined ? makeStateDir(state) : null;
  const cleanUp = () => {
    rmSync(built.dir, { recursive: true, force: true });
    if (ownState !== null) rmSync(ownState, { recursive: true, force: true });
  };
  try {
    const server = await startDevServer(
      built.config,
      BENCH_DEV_ENV,
      persistTo ?? ownState ?? undefined,
      inspectorPort,
    );
    return {
      ...server,
      bundle: built.bundle,
      async stop() {
        await server.stop();
        cleanUp();
      },
    };
  } catch (error) {
    cleanUp();
    throw error;
  }
}
