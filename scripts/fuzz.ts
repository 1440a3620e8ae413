/**
 * `npm run fuzz -- --seconds N [--seed S]`: the guard's differential fuzz test
 * (test/guard-fuzz.test.ts) for N seconds instead of CI's bounded run.
 */
import { spawnSync } from "node:child_process";

function option(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? undefined : process.argv[at + 1];
}

const seconds = Number(option("seconds") ?? 60);
const seed = option("seed") ?? String(Date.now() % 1_000_000_000);
if (!Number.isFinite(seconds) || seconds <= 0) {
  console.error("usage: npm run fuzz -- --seconds N [--seed S]");
  process.exit(2);
}
console.log(`guard fuzz for ${seconds} s, seed ${seed}`);
const run = spawnSync("npx", ["vitest", "run", "test/guard-fuzz.test.ts"], {
  stdio: "inherit",
  env: { ...process.env, FUZZ_SECONDS: String(seconds), FUZZ_SEED: seed },
});
process.exit(run.status ?? 1);
