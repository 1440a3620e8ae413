/**
 * Benchmark Worker: the production front door and Durable Objects, plus the
 * in-runtime load driver at POST /bench/run (and /bench/crash-run, /bench/reads, /bench/costs). Only wrangler.bench.toml uses it,
 * so the driver is never part of the production bundle.
 */
import { app } from "../workers/app";
import type { CostRequest } from "./cost-types";
import { BenchDriver, type CrashRunRequest, type RunRequest } from "./driver";
import type { ReadRunRequest } from "./read-types";

export { ClusterDirectory } from "../durable-objects/directory";
export { ClusterNode } from "../durable-objects/node";
export { BenchDriver };

interface BenchEnv {
  BENCH: DurableObjectNamespace<BenchDriver>;
}

export default {
  async fetch(request: Request, env: Env & BenchEnv, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/bench/stop" && request.method === "POST") {
      const body = (await request.json()) as { cluster: string };
      await env.BENCH.get(env.BENCH.idFromName(`driver-${body.cluster}`)).stop();
      return Response.json({ stopped: true });
    }
    if (url.pathname === "/bench/crash-run" && request.method === "POST") {
      const body = (await request.json()) as CrashRunRequest;
      const driver = env.BENCH.get(env.BENCH.idFromName(`driver-${body.cluster}`));
      return Response.json(await driver.crashRun(body));
    }
    if (url.pathname === "/bench/reads" && request.method === "POST") {
      const body = (await request.json()) as ReadRunRequest;
      const driver = env.BENCH.get(env.BENCH.idFromName(`driver-${body.cluster}`));
      return Response.json(await driver.reads(body));
    }
    if (url.pathname === "/bench/costs" && request.method === "POST") {
      const body = (await request.json()) as CostRequest & { object: string };
      const probe = env.BENCH.get(env.BENCH.idFromName(`costs-${body.object}`));
      return Response.json({ done: await probe.costs(body) });
    }
    if (url.pathname === "/bench/run" && request.method === "POST") {
      const body = (await request.json()) as RunRequest;
      const driver = env.BENCH.get(env.BENCH.idFromName(`driver-${body.cluster}`));
      return Response.json(await driver.run(body));
    }
    return app.fetch(request, env, ctx);
  },
};
