/** The machine and code a run measured, read at run time for the report. */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, release, totalmem } from "node:os";
import { type BenchState, benchState, describeState } from "./state-dir.ts";

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  wrangler: string;
  workerd: string;
  /** The commit measured, and the files that differed from it in the working tree. */
  commit: string;
  changedFiles: number;
  /** Where the servers of the run keep their Durable Objects' storage (state-dir.ts). */
  state: BenchState;
}

function packageVersion(name: string, under = "node_modules"): string {
  try {
    const pkg = JSON.parse(readFileSync(`${under}/${name}/package.json`, "utf8")) as {
      version?: string;
    };
    return pkg.version ?? "unknown";
  } catch {
    return "unknown";
  }
}

/**
 * The workerd that `wrangler dev` runs: wrangler's own copy when npm nested one
 * under it (a different version from the top-level one the vitest pool uses).
 */
function devWorkerdVersion(): string {
  const nested = packageVersion("workerd", "node_modules/wrangler/node_modules");
  return nested === "unknown" ? packageVersion("workerd") : nested;
}

function git(args: string[]): string {
  try {
    return execFileSync("git", args, {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return "";
  }
}

export function readMachine(): Machine {
  const list = cpus();
  return {
    cpu: list[0]?.model.trim() ?? "unknown",
    cores: list.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `${process.platform} ${release()}`,
    node: process.version,
    wrangler: packageVersion("wrangler"),
    workerd: devWorkerdVersion(),
    commit: git(["rev-parse", "--short", "HEAD"]) || "unknown",
    changedFiles: git(["status", "--porcelain", "--untracked-files=no"])
      .split("\n")
      .filter((line) => line.length > 0).length,
    state: benchState(),
  };
}

export function describeMachine(m: Machine): string {
  const code =
    m.changedFiles === 0
      ? `commit ${m.commit}`
      : `commit ${m.commit} with ${m.changedFiles} tracked file(s) changed in the working tree`;
  return `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.os}; Node ${m.node}, wrangler ${m.wrangler}, workerd ${m.workerd}; ${describeState(m.state)}; ${code}`;
}
