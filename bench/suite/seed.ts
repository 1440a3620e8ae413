/**
 * The Comdb2 seed's published numbers (an 8-node cluster: master + 7 replicants,
 * 8 writer threads, 300 s runs), printed beside ours for the same experiment.
 * Raw runs are kept as published; tables show their median.
 */
import { median } from "./stats.ts";

export const SEED_SETUP = "Comdb2, 8 nodes (master + 7 replicants), 8 writer threads";

/** Experiment 1: inserts/s per run, waiter off and on, by clients. */
export const seedOffOn: Record<number, { off: number[]; on: number[] }> = {
  16: { off: [14_293, 14_354, 15_580], on: [19_728, 19_654, 19_720] },
  32: { off: [15_348, 15_313, 13_591], on: [21_983, 22_144, 22_002] },
  64: { off: [14_006, 14_465, 14_089], on: [21_681, 21_411, 21_500] },
  128: { off: [15_761, 14_895, 15_113], on: [21_910, 21_860, 21_901] },
  256: { off: [14_670, 13_762, 14_788], on: [21_941, 21_291, 22_341] },
  1000: { off: [13_647, 14_720, 13_666], on: [19_115, 19_462, 19_261] },
};

export function seedOffOnMedian(clients: number): { off: number; on: number } | null {
  const runs = seedOffOn[clients];
  return runs === undefined ? null : { off: median(runs.off), on: median(runs.on) };
}

/** Experiment 2: waiter on, inserts/s by writer threads, at 64 and 1000 clients. */
export const seedWriters: Record<number, Record<number, number>> = {
  64: { 8: 21_456, 16: 21_149, 32: 21_408 },
  1000: { 8: 18_922, 16: 18_987, 32: 18_589 },
};

/** Experiment 3: late acks at 64 clients, off and on inserts/s, by ack delay in ms. */
export const seedLateAcks: Record<number, { off: number; on: number }> = {
  1: { off: 5_903, on: 22_454 },
  2: { off: 3_419, on: 20_574 },
  5: { off: 1_490, on: 10_938 },
};

/** Experiment 3: every replicant sleeps 1 ms per message, 16 clients. */
export const seedSlowReplicas = { applyDelayMs: 1, clients: 16, off: 186, on: 186 };

/** Experiment 5: inserts/s by cap, and inline waits per run where the seed gives them. */
export const seedCap: Record<number, Record<number, { rate: number; inline?: string }>> = {
  500: {
    128: { rate: 18_857, inline: "~72k" },
    256: { rate: 19_230, inline: "~32k" },
    512: { rate: 20_706 },
    1024: { rate: 21_088 },
    2048: { rate: 20_902 },
  },
  1000: {
    128: { rate: 17_028, inline: "~85k" },
    256: { rate: 17_409, inline: "~40k" },
    512: { rate: 19_281 },
    1024: { rate: 19_135 },
    2048: { rate: 19_162 },
  },
};

export interface SeedCrashRow {
  clients: number;
  waiter: "on" | "off";
  before: string;
  after: string;
  newMaster: string;
  fullSpeed: string;
  retried: string;
  failed: string;
  lost: number;
}

/** Experiment 6 (the seed's "master killed mid-load", 3 runs each, ranges as published). */
export const seedCrash: SeedCrashRow[] = [
  {
    clients: 500,
    waiter: "off",
    before: "14.4–14.6k",
    after: "15.8–16.0k",
    newMaster: "2.0–9.4 s",
    fullSpeed: "3 s",
    retried: "0–6",
    failed: "0",
    lost: 0,
  },
  {
    clients: 500,
    waiter: "on",
    before: "18.8–19.7k",
    after: "20.7–21.5k",
    newMaster: "3.5–6.4 s",
    fullSpeed: "4–6 s",
    retried: "403–489",
    failed: "0–427",
    lost: 0,
  },
  {
    clients: 1000,
    waiter: "off",
    before: "11.3–12.7k",
    after: "14.0–14.5k",
    newMaster: "8.2–8.6 s",
    fullSpeed: "5–8 s",
    retried: "4–7",
    failed: "0",
    lost: 0,
  },
  {
    clients: 1000,
    waiter: "on",
    before: "15.9–18.4k",
    after: "18.7–19.7k",
    newMaster: "2.9–6.6 s",
    fullSpeed: "8 s",
    retried: "690–971",
    failed: "0–7,291",
    lost: 0,
  },
];

/** Experiment 7: one replicant down 60 s at 1000 clients, then restarted. */
export const seedCatchup = [
  { setting: "waiter off (~14k inserts/s)", behind: "1260 MB", coherentAfter: "74 s" },
  {
    setting: "waiter on (~19–20k inserts/s)",
    behind: "1533–1639 MB",
    coherentAfter: "427 s / 472 s / never (600 s)",
  },
  {
    setting: "waiter on + logput_window 40 MB",
    behind: "1558–1615 MB",
    coherentAfter: "75 s / 82 s",
  },
];
