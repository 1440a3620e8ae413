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
  },
});
