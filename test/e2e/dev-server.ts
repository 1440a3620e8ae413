/**
 * Starts `wrangler dev` (what `npm start` runs) on a free port with fresh local
 * storage, and stops it afterwards.
 */

/**
 * `npm start` turns wrangler's local observability collector off: it halves
 * replicated throughput under load (docs/benchmarks.md), so e2e, chaos and
 * bench runs would otherwise test a slower server than the one users start.
 * X_LOCAL_OBSERVABILITY=true in the caller's environment (or in `env`) turns
 * it back on, as `npm run start:traced` does.
 */
const START_ENV = { X_LOCAL_OBSERVABILITY: process.env.X_LOCAL_OBSERVABILITY ?? "false" };
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface DevServer {
  url: string;
  port: number;
  /** The process group of wrangler dev and every process it started (workerd among them). */
  pid: number;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address !== null
          ? resolve(address.port)
          : reject(new Error("no port")),
      );
    });
  });
}

/**
 * `env` adds to (or overrides) the environment wrangler runs with;
 * `persistTo` keeps the local state in a directory of the caller's, which
 * outlives the server (a restart on the same state), instead of a temporary one.
 */
export async function startDevServer(
  configPath = "wrangler.toml",
  env: Record<string, string> = {},
  persistTo?: string,
  /** The inspector's port (0: any free one; bench:profile connects to a known one). */
  inspectorPort = 0,
): Promise<DevServer> {
  const port = await freePort();
  const persist = persistTo ?? mkdtempSync(join(tmpdir(), "dosql-e2e-"));
  const child: ChildProcess = spawn(
    "npx",
    [
      "wrangler",
      "dev",
      "--config",
      configPath,
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--persist-to",
      persist,
      "--inspector-port",
      String(inspectorPort),
      "--show-interactive-dev-session=false",
    ],
    {
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
      env: { ...process.env, CI: "true", ...START_ENV, ...env },
    },
  );
  let output = "";
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("Ready on")) resolve();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.on("exit", (code) => reject(new Error(`wrangler dev exited ${code}:\n${output}`)));
  });
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error(`wrangler dev not ready in 90 s:\n${output}`)), 90_000),
  );
  await Promise.race([ready, timeout]);
  const url = `http://127.0.0.1:${port}`;
  // The dev server answers once the Worker and its Durable Objects are loaded.
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`${url}/`)).ok) break;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return {
    url,
    port,
    pid: child.pid ?? 0,
    async stop() {
      if (child.pid !== undefined && child.exitCode === null) {
        const exited = new Promise((r) => child.on("exit", r));
        process.kill(-child.pid, "SIGTERM");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        if (child.exitCode === null) process.kill(-child.pid, "SIGKILL");
      }
      if (persistTo === undefined) rmSync(persist, { recursive: true, force: true });
    },
  };
}
