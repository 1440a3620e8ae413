/**
 * The change stream over real HTTP against `wrangler dev`, read as `curl -N`
 * reads it: a live feed from LSN 0 that carries on across master crashes
 * with every acknowledged write once, in order, and no gap; and a client that
 * reconnects with Last-Event-ID, as EventSource does, resuming exactly after.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, startDevServer } from "./dev-server";

const DATA = "dev-data-token";
const ADMIN = "dev-admin-token";

let server: DevServer;

beforeAll(async () => {
  server = await startDevServer();
});

afterAll(async () => {
  await server?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function post(path: string, body: unknown, token = DATA, key?: string) {
  const response = await fetch(`${server.url}${path}`, {
    method: path.endsWith("tunables") ? "PATCH" : "POST",
    headers: {
      authorization: `Bearer ${token}`,
      ...(key === undefined ? {} : { "idempotency-key": key }),
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Reads an SSE response as it arrives: the `id`s of its commit events. */
function follow(response: Response) {
  const ids: number[] = [];
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const pump = (async () => {
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (chunk.done) return;
      buffer += decoder.decode(chunk.value, { stream: true });
      for (let at = buffer.indexOf("\n\n"); at >= 0; at = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        const id = /^id: (\d+)$/m.exec(block)?.[1];
        if (id !== undefined && /^event: commit$/m.test(block)) ids.push(Number(id));
      }
    }
  })();
  return {
    ids,
    async close() {
      await reader.cancel().catch(() => undefined);
      await pump;
    },
  };
}

async function until(what: string, check: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe("the change stream against wrangler dev", () => {
  it("is a live feed that survives master crashes without a gap, and resumes with Last-Event-ID", async () => {
    const c = "changes-e2e";
    expect(
      (
        await post(`/v1/clusters/${c}/exec`, {
          statements: [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY)" }],
        })
      ).status,
    ).toBe(200);
    expect(
      (await post(`/admin/clusters/${c}/tunables`, { debug_fault_injection: true }, ADMIN)).status,
    ).toBe(200);
    const response = await fetch(`${server.url}/v1/clusters/${c}/changes?from=0`, {
      headers: { authorization: `Bearer ${DATA}` },
    });
    expect(response.status).toBe(200);
    const feed = follow(response);
    const acked: number[] = [];
    for (let i = 1; i <= 30; i++) {
      if (i % 10 === 0)
        expect((await post(`/admin/clusters/${c}/master/crash`, {}, ADMIN)).status).toBe(202);
      const write = { statements: [{ sql: "INSERT INTO t VALUES (?)", params: [i] }] };
      for (let attempt = 0; ; attempt++) {
        const res = await post(`/v1/clusters/${c}/exec`, write, DATA, `${c}-${i}`);
        if (res.status === 200) {
          acked.push(res.body.lsn as number);
          break;
        }
        expect(attempt, JSON.stringify(res.body)).toBeLessThan(20);
        await sleep(200);
      }
    }
    const last = acked[acked.length - 1] ?? 0;
    await until("every acknowledged write on the feed", () => feed.ids.includes(last));
    const seen = feed.ids;
    expect(new Set(seen).size, "no repeat").toBe(seen.length);
    const first = seen[0] ?? 0;
    expect(seen, "in order, no gap").toEqual(
      Array.from({ length: seen.length }, (_, i) => first + i),
    );
    for (const lsn of acked) expect(seen).toContain(lsn);
    await feed.close();

    // A client that lost its connection reconnects with the last id it saw.
    const resumeAfter = acked[14] ?? 0;
    const again = await fetch(`${server.url}/v1/clusters/${c}/changes`, {
      headers: { authorization: `Bearer ${DATA}`, "last-event-id": String(resumeAfter) },
    });
    const resumed = follow(again);
    await until("the rest on the resumed feed", () => resumed.ids.includes(last));
    expect(resumed.ids[0]).toBe(resumeAfter + 1);
    expect(resumed.ids).toEqual(seen.filter((lsn) => lsn > resumeAfter));
    await resumed.close();
  });
});
