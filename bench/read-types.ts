/** What the read benchmark asks the in-runtime driver for, and what it gets back. */
import type { Consistency } from "../core/protocol";

export type ReadTarget = "master" | "replicas";

export interface ReadRunRequest {
  cluster: string;
  /** Inserting clients during the whole run (the driver's `run`), 0 for an idle cluster. */
  writers: number;
  readers: number;
  secondsPerCell: number;
  warmupSeconds: number;
  /**
   * Pause after each read (0: none). The local runtime runs every object on one
   * event loop, and readers that never pause keep it from ever idling, so no
   * timer fires: the master's heartbeats stop and replicas lose their leases.
   */
  pauseMs: number;
  tag: string;
}

export interface ReadCell {
  target: ReadTarget;
  consistency: Consistency;
  reads: number;
  readsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Reads a replica passed to the master (no lease, behind the bookmark, barrier bound). */
  redirected: number;
  /** Why the first redirected read was redirected. */
  firstRedirect: string | null;
  errors: number;
  firstError: string | null;
}

export interface ReadRunResult {
  writers: number;
  insertsPerSecond: number;
  cells: ReadCell[];
}
