/**
 * A V8 CPU profile of the Worker through `wrangler dev`'s inspector proxy
 * (Chrome DevTools Protocol over a WebSocket). The proxy refuses an upgrade
 * without an allowed Origin, so the socket sends a local one.
 */
import type { CpuProfile } from "./cpu-profile.ts";

export interface Profiler {
  start(): Promise<void>;
  stop(): Promise<CpuProfile>;
  close(): void;
}

/** `samplingUs`: microseconds between samples (V8's default is 1,000). */
export async function connectProfiler(inspectorPort: number, samplingUs = 200): Promise<Profiler> {
  const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json()) as {
    webSocketDebuggerUrl: string;
  }[];
  const target = targets[0];
  if (target === undefined) throw new Error("the inspector lists no Worker");
  const socket = new WebSocket(target.webSocketDebuggerUrl, {
    headers: { origin: "http://localhost" },
  } as unknown as string[]);
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve());
    socket.addEventListener("error", () => reject(new Error("the inspector refused the socket")));
  });
  let nextId = 0;
  const pending = new Map<number, (message: { result?: unknown; error?: unknown }) => void>();
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
    if (message.id === undefined) return;
    pending.get(message.id)?.(message);
    pending.delete(message.id);
  });
  const send = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<unknown>((resolve, reject) => {
      const id = ++nextId;
      pending.set(id, (message) =>
        message.error === undefined
          ? resolve(message.result)
          : reject(new Error(`${method}: ${JSON.stringify(message.error)}`)),
      );
      socket.send(JSON.stringify({ id, method, params }));
    });
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: samplingUs });
  return {
    async start() {
      await send("Profiler.start");
    },
    async stop() {
      const result = (await send("Profiler.stop")) as { profile: CpuProfile };
      return result.profile;
    },
    close() {
      socket.close();
    },
  };
}
