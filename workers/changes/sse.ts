/**
 * The change stream as Server-Sent Events. Each acknowledged commit is one
 * `commit` event whose `id` is its LSN; an idle stream sends a comment every
 * heartbeat so proxies keep it open. The stream keeps its own position (the
 * last LSN looked at) and asks for the next page from there, so a node that
 * restarts or a master that changes costs a retry, never a gap or a repeat.
 * A client that reconnects sends Last-Event-ID and resumes after it.
 */
import type { ChangeEvent } from "../../core/change-events";
import type { ChangesPage } from "../../durable-objects/change-feed";
import { toApiError } from "../errors";
import type { EventsPage } from "./source";

/** How long an idle stream waits before asking again. */
const POLL_MS = 250;
/** How long a stream waits after a failed page before asking again. */
const RETRY_MS = 1000;

const encoder = new TextEncoder();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function eventText(event: ChangeEvent): string {
  return `id: ${event.lsn}\nevent: commit\ndata: ${JSON.stringify(event)}\n\n`;
}

export function sseStream(
  first: EventsPage,
  next: (after: number) => Promise<ChangesPage>,
  heartbeatMs: number,
): Response {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const send = (text: string) => writer.write(encoder.encode(text));
  // The client going away cancels the body, which errors this side: the loop
  // stops at once instead of asking its node for pages until a write fails.
  let gone = false;
  writer.closed.catch(() => {
    gone = true;
  });
  const run = async () => {
    await send(`retry: ${RETRY_MS}\n\n`);
    let page: ChangesPage = first;
    let after = first.scanned;
    let quietSince = Date.now();
    for (;;) {
      if (page.kind === "events") {
        for (const event of page.events) await send(eventText(event));
        if (page.events.length > 0) quietSince = Date.now();
        const moved = page.scanned > after;
        after = page.scanned;
        if (!moved) await sleep(POLL_MS);
      } else if (page.kind === "gone") {
        // The log passed this stream while it was away: say so and end it.
        const earliest = page.truncatedThrough + 1;
        await send(`event: gone\ndata: ${JSON.stringify({ code: "GONE", earliest })}\n\n`);
        return;
      } else await sleep(RETRY_MS);
      if (Date.now() - quietSince >= heartbeatMs) {
        await send(": keep-alive\n\n");
        quietSince = Date.now();
      }
      if (gone) return;
      try {
        page = await next(after);
      } catch (error) {
        console.warn("change stream page failed, asking again", toApiError(error).message);
        page = { kind: "unavailable", reason: "the page failed" };
      }
    }
  };
  // A write fails once the client has gone: that ends the loop.
  run()
    .catch(() => undefined)
    .finally(() => writer.close().catch(() => undefined));
  return new Response(readable, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      "x-accel-buffering": "no",
    },
  });
}
