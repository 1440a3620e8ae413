/** What both load drivers report for one run. */

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
}

export interface LoadResult {
  driver: DriverName;
  clients: number;
  /** Measured seconds (after the warm-up). */
  seconds: number;
  inserts: number;
  insertsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  firstError: string | null;
}
