/** What both load drivers report for one run. */
import type { LoadSummary } from "../stats.ts";

export type DriverName = "http" | "in-runtime";

export const DRIVER_LABEL: Record<DriverName, string> = {
  http: "HTTP (front door)",
  "in-runtime": "in-runtime (BenchDriver)",
};

export interface LoadRequest {
  url: string;
  cluster: string;
  clients: number;
  seconds: number;
  warmupSeconds: number;
  /** Distinguishes the tables of successive runs on one cluster. */
  tag: string;
  /** Data token for the HTTP driver (default: the development token). */
  token?: string;
  /** In-runtime driver: each insert also writes a text of this many bytes. */
  rowBytes?: number;
}

/** One run's summary (bench/stats.ts builds it for both drivers). */
export type LoadResult = LoadSummary<DriverName>;
