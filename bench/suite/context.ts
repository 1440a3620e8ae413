/** What every experiment is given: where the cluster is, how long to run, and how to report. */
import type { DriverName } from "./load.ts";
import type { RunSettings, Sample } from "./measure.ts";
import { median } from "./stats.ts";
import type { Topologies } from "./topology.ts";

export interface Context {
  url: string;
  /** Every point and repeat (`--full`) or the quick pass. */
  full: boolean;
  /** The drivers the throughput experiments use. */
  drivers: DriverName[];
  settings: RunSettings;
  topologies: Topologies;
  log: (line: string) => void;
}

/** "median of 3 runs of 8 s after 2 s of warm-up" or the quick pass's single run. */
export function runsPhrase(settings: RunSettings): string {
  const each = `${settings.seconds} s after ${settings.warmupSeconds} s of warm-up`;
  return settings.repeats === 1
    ? `1 run of ${each} per point (quick mode: no repeats)`
    : `median of ${settings.repeats} runs of ${each} per point, on and off alternating`;
}

/** The median of one field over a point's samples (NaN when the point was not run). */
export function med(samples: Sample[] | undefined, pick: (s: Sample) => number): number {
  return median((samples ?? []).map(pick));
}
