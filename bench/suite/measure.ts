/**
 * One measured point: set the tunables, let them reach the replicas, check the
 * cluster is healthy, run a load driver, and read the commit-path counters
 * before and after. Points run in the order given, and every second repeat
 * in the reverse order (pointOrder), so on and off alternate within every
 * repeat, neither always goes first, and machine drift cancels out of the
 * ratios.
 */
import {
  type ClusterClient,
  type StatusDelta,
  type TunablePatch,
  sleep,
  statusDelta,
} from "./cluster.ts";
import { runHttpLoad } from "./http-driver.ts";
import type { DriverName, LoadResult } from "./load.ts";
import { runInRuntimeLoad } from "./runtime-driver.ts";

export interface Sample extends LoadResult, StatusDelta {
  /** Replicas that were not coherent when the run started (after waiting for them). */
  notCoherentAtStart: string[];
  /** Replicas not coherent when the run ended, each with its state and reason. */
  notCoherentAtEnd: string[];
}

export interface PointSpec {
  /** Stable key: the same point in every repeat. */
  key: string;
  /** What the progress line says about the point. */
  label: string;
  driver: DriverName;
  cluster: ClusterClient;
  clients: number;
  /** Tunables for this point; every other benchmark tunable is reset to its default. */
  tunables: TunablePatch;
}

export interface RunSettings {
  url: string;
  seconds: number;
  warmupSeconds: number;
  repeats: number;
  /** Tunables every point starts from (the defaults of those the experiments change). */
  baseTunables: TunablePatch;
  log: (line: string) => void;
}

let tagCounter = 0;

/** A fresh table-name tag: every run inserts into tables of its own. */
export function nextTag(): string {
  tagCounter++;
  return `${Date.now().toString(36)}${tagCounter}`;
}

export async function measurePoint(settings: RunSettings, spec: PointSpec): Promise<Sample> {
  await spec.cluster.patchTunables({ ...settings.baseTunables, ...spec.tunables });
  // Settings reach the replicas with the next batch or heartbeat.
  await sleep(300);
  const notCoherentAtStart = await spec.cluster.waitCoherent(15_000);
  const before = await spec.cluster.status();
  const request = {
    url: settings.url,
    cluster: spec.cluster.name,
    clients: spec.clients,
    seconds: settings.seconds,
    warmupSeconds: settings.warmupSeconds,
    tag: nextTag(),
  };
  const result =
    spec.driver === "http" ? await runHttpLoad(request) : await runInRuntimeLoad(request);
  const after = await spec.cluster.status();
  return {
    ...result,
    ...statusDelta(before, after),
    notCoherentAtStart,
    notCoherentAtEnd: after.replicas
      .filter((r) => r.state !== "coherent")
      .map(
        (r) => `${r.id} ${r.state}${r.incoherentReason === null ? "" : ` (${r.incoherentReason})`}`,
      ),
  };
}

export function describeSample(s: Sample): string {
  const inline = s.inlineWaits.off + s.inlineWaits.queueFull + s.inlineWaits.notPlain;
  const parts = [
    `${s.insertsPerSecond} inserts/s`,
    `p50 ${s.p50Ms} ms`,
    `p99 ${s.p99Ms} ms`,
    `ack held ${s.ackHeldMs.toFixed(1)} ms`,
    `inline waits ${inline}`,
    `errors ${s.errors}`,
  ];
  if (s.notCoherentAtStart.length > 0)
    parts.push(`not coherent at start: ${s.notCoherentAtStart.join(",")}`);
  if (s.notCoherentAtEnd.length > 0)
    parts.push(`not coherent at end: ${s.notCoherentAtEnd.join("; ")}`);
  if (s.firstError !== null) parts.push(`first error: ${s.firstError.slice(0, 120)}`);
  return parts.join(", ");
}

/** The order of the points in repeat `r` (from 1): as given, then reversed, alternating. */
export function pointOrder<T>(points: readonly T[], r: number): T[] {
  return r % 2 === 1 ? [...points] : [...points].reverse();
}

/**
 * Runs every point `repeats` times, repeat by repeat, printing one line per
 * point; returns the samples by point key.
 */
export async function runPoints(
  settings: RunSettings,
  experiment: string,
  points: PointSpec[],
): Promise<Map<string, Sample[]>> {
  const samples = new Map<string, Sample[]>();
  const total = points.length * settings.repeats;
  let done = 0;
  for (let r = 1; r <= settings.repeats; r++) {
    for (const point of pointOrder(points, r)) {
      done++;
      const started = Date.now();
      const sample = await measurePoint(settings, point);
      const list = samples.get(point.key) ?? [];
      list.push(sample);
      samples.set(point.key, list);
      const took = ((Date.now() - started) / 1000).toFixed(1);
      settings.log(
        `[${experiment} ${done}/${total}] ${point.driver} ${point.label}: ${describeSample(sample)} (${took} s)`,
      );
    }
  }
  return samples;
}
