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
