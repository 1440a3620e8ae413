/**
 * The in-runtime load driver, seen from Node: POST /bench/run on the bench
 * Worker makes the BenchDriver object run its clients inside workerd, calling
 * the master by DO RPC as the front door does, without the dev server's proxy.
 */
import type { LoadRequest, LoadResult } from "./load.ts";

export async function runInRuntimeLoad(request: LoadRequest): Promise<LoadResult> {
  const response = await fetch(`${request.url}/bench/run`, {
    method: "POST",
    body: JSON.stringify({
      cluster: request.cluster,
      clients: request.clients,
      seconds: request.seconds,
      warmupSeconds: request.warmupSeconds,
      tag: request.tag,
      ...(request.rowBytes === undefined ? {} : { rowBytes: request.rowBytes }),
    }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`/bench/run: ${response.status} ${text.slice(0, 300)}`);
  return { ...(JSON.parse(text) as LoadResult), driver: "in-runtime" };
}

/** What BenchDriver.crashRun reports (bench/driver.ts; the Worker side is typed there). */
export interface InRuntimeCrashRun {
  tables: string[];
  acked: Record<string, number[]>;
  successes: [number, number][];
  startedAt: number;
  crashAt: number;
  endAt: number;
  retriedRequests: number;
  resends: number;
  replayed: number;
  failed: number;
  firstFailure: string | null;
}

/** The driver loads the cluster and crashes its master itself, after `beforeSeconds`. */
export async function runInRuntimeCrash(request: {
  url: string;
  cluster: string;
  clients: number;
  tag: string;
  beforeSeconds: number;
  afterSeconds: number;
}): Promise<InRuntimeCrashRun> {
  const { url, ...body } = request;
  const response = await fetch(`${url}/bench/crash-run`, {
    method: "POST",
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`/bench/crash-run: ${response.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as InRuntimeCrashRun;
}
