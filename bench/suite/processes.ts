/**
 * CPU time of a process group read from /proc (Linux): what `wrangler dev`
 * and the workerd it runs cost, sampled from outside the runtime.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second of /proc's utime and stime (USER_HZ; 100 on Linux). */
const TICKS_PER_SECOND = 100;

interface ProcStat {
  pid: number;
  pgrp: number;
  cpuTicks: number;
  command: string;
}

function readStats(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      // Fields after "(comm)": state ppid pgrp ... utime (14th field) stime (15th).
      const fields = stat.slice(close + 2).split(" ");
      out.push({
        pid: Number(entry),
        pgrp: Number(fields[2]),
        cpuTicks: Number(fields[11]) + Number(fields[12]),
        command: stat.slice(stat.indexOf("(") + 1, close),
      });
    } catch {
      // The process ended meanwhile.
    }
  }
  return out;
}

/** CPU seconds used so far by every live process of group `pgrp`, by command. */
export function groupCpuSeconds(pgrp: number): Map<string, number> {
  const byCommand = new Map<string, number>();
  for (const p of readStats()) {
    if (p.pgrp !== pgrp) continue;
    byCommand.set(p.command, (byCommand.get(p.command) ?? 0) + p.cpuTicks / TICKS_PER_SECOND);
  }
  return byCommand;
}

/** CPU seconds the workerd processes of group `pgrp` have used so far. */
export function workerdCpuSeconds(pgrp: number): number {
  return groupCpuSeconds(pgrp).get("workerd") ?? 0;
}

/**
 * The share of one core the group used over `ms` (1.0 = a whole core), in
 * all and per command (workerd, node).
 */
export async function groupCpuShare(
  pgrp: number,
  ms: number,
): Promise<{ total: number; byCommand: Record<string, number> }> {
  const before = groupCpuSeconds(pgrp);
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const seconds = (performance.now() - started) / 1000;
  const after = groupCpuSeconds(pgrp);
  const byCommand: Record<string, number> = {};
  let total = 0;
  for (const [command, used] of after) {
    const share = (used - (before.get(command) ?? 0)) / seconds;
    byCommand[command] = share;
    total += share;
  }
  return { total, byCommand };
}

const PAGE_BYTES = 4096;

/** Resident bytes of every live workerd process of group `pgrp` (/proc/PID/statm). */
export function workerdRssBytes(pgrp: number): number {
  let total = 0;
  for (const p of readStats()) {
    if (p.pgrp !== pgrp || p.command !== "workerd") continue;
    try {
      const resident = Number(readFileSync(`/proc/${p.pid}/statm`, "utf8").split(" ")[1]);
      total += resident * PAGE_BYTES;
    } catch {
      // The process ended meanwhile.
    }
  }
  return total;
}

/**
 * The peak of workerd's resident memory while `work` runs, sampled every
 * `everyMs`. Locally one workerd holds every object of every cluster and the
 * in-runtime driver: this is the whole runtime's memory, not one object's.
 */
export async function peakRss<T>(
  pgrp: number,
  work: () => Promise<T>,
  everyMs = 200,
): Promise<{ result: T; startBytes: number; peakBytes: number }> {
  const startBytes = workerdRssBytes(pgrp);
  let peakBytes = startBytes;
  const timer = setInterval(() => {
    peakBytes = Math.max(peakBytes, workerdRssBytes(pgrp));
  }, everyMs);
  try {
    const result = await work();
    peakBytes = Math.max(peakBytes, workerdRssBytes(pgrp));
    return { result, startBytes, peakBytes };
  } finally {
    clearInterval(timer);
  }
}
