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
    }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`/bench/run: ${response.status} ${text.slice(0, 300)}`);
  return { ...(JSON.parse(text) as LoadResult), driver: "in-runtime" };
}
