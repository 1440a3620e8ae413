/**
 * workers/changes/sse.ts: a stream whose client has gone stops asking its
 * node for pages at once, rather than polling every 250 ms until its next
 * heartbeat write fails (up to heartbeat_ms, 15 s by default).
 */
import { expect, it } from "vitest";
import type { ChangesPage } from "../durable-objects/change-feed";
import { sseStream } from "../workers/changes/sse";

const idle = (after: number): ChangesPage => ({
  kind: "events",
  events: [],
  scanned: after,
  acknowledged: after,
});

it("stops asking for pages once the client cancels the body", async () => {
  let asked = 0;
  const response = sseStream(
    idle(0) as Extract<ChangesPage, { kind: "events" }>,
    async (after) => {
      asked++;
      return idle(after);
    },
    60_000,
  );
  const reader = response.body?.getReader();
  if (reader === undefined) throw new Error("no body");
  await reader.read();
  // Polling while the client reads: a page every 250 ms.
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  expect(asked).toBeGreaterThanOrEqual(2);
  await reader.cancel();
  await new Promise((resolve) => setTimeout(resolve, 300));
  const atCancel = asked;
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect(asked).toBe(atCancel);
});
