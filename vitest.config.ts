import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      // `npm run fuzz -- --seconds N --seed S` runs the guard fuzz test for longer.
      miniflare: {
        bindings: {
          FUZZ_SECONDS: process.env.FUZZ_SECONDS ?? "",
          FUZZ_SEED: process.env.FUZZ_SEED ?? "",
        },
      },
    }),
  ],
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/e2e/**", "node_modules/**"],
    // Most files wait on timers (leases, heartbeats, deadlines) rather than
    // compute: two at once took the suite from 882 to 549 s on 2 cores, where
    // the default (one less than the cores) runs one.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The pool tears a file's runtime down while clusters its tests started are
    // still running (heartbeats, relays, snapshot streams): a call the runner
    // itself still had pending then ends with this error. It says nothing about
    // the code under test; every other unhandled error still fails the run.
    onUnhandledError(error) {
      const teardown =
        error.name === "EnvironmentTeardownError" && /Closing rpc while/.test(error.message);
      return teardown ? false : undefined;
    },
  },
});
