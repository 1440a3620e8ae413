/**
 * Where a benchmark keeps the local Durable Objects' SQLite files. workerd
 * commits every Durable Object transaction to its WAL with write() and fsync()
 * calls on the one thread that runs every object here: on this machine's disk
 * that came to about 270 µs per commit against 70 in memory (bench:storage), a
 * stall of the whole cluster at each of them. Cloudflare's storage makes a
 * commit durable by replicating it off the object's thread, so by default the
 * benchmarks keep their state in memory (tmpfs) and measure the design, not
 * this disk; BENCH_STATE=disk measures with the disk, and bench:storage runs
 * both side by side.
 */
import { accessSync, constants, mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export type BenchState = "memory" | "disk";

/** A tmpfs every Linux machine has; the state lives in memory there. */
const MEMORY_ROOT = "/dev/shm";

function memoryAvailable(): boolean {
  try {
    if (!statSync(MEMORY_ROOT).isDirectory()) return false;
    accessSync(MEMORY_ROOT, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** BENCH_STATE if set (memory or disk), else memory where a tmpfs is at hand. */
export function benchState(env: Record<string, string | undefined> = process.env): BenchState {
  const asked = env.BENCH_STATE;
  if (asked === "memory" || asked === "disk") {
    if (asked === "memory" && !memoryAvailable()) {
      throw new Error(`BENCH_STATE=memory needs a writable tmpfs at ${MEMORY_ROOT}`);
    }
    return asked;
  }
  if (asked !== undefined && asked !== "") {
    throw new Error(`BENCH_STATE is memory or disk, not ${JSON.stringify(asked)}`);
  }
  return memoryAvailable() ? "memory" : "disk";
}

/** A new, empty directory for one server's state, of the given kind. */
export function makeStateDir(state: BenchState, prefix = "dosql-bench-state-"): string {
  return mkdtempSync(join(state === "memory" ? MEMORY_ROOT : tmpdir(), prefix));
}

export function describeState(state: BenchState): string {
  return state === "memory"
    ? `Durable Object storage in memory (${MEMORY_ROOT}, tmpfs)`
    : `Durable Object storage on disk (${tmpdir()})`;
}
