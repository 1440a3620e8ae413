import { defineConfig } from "vitest/config";

// End-to-end tests run in Node: they start `wrangler dev` as `npm start` does and talk
// to it over real HTTP on 127.0.0.1.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.e2e.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
