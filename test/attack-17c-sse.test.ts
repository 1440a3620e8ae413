/**
 * Adversarial review 17c: the change stream's SSE route (workers/changes/sse.ts).
 *
 * Promised (docs/api.md, changes): "every acknowledged commit after LSN from
 * ..., in LSN order, each exactly once"; the stream goes on while the client reads.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sseBlocks } from "./change-helpers";
import { DATA, exec, freshCluster } from "./helpers";
import { ok } from "./review-helpers";

async function readEvents(
  body: ReadableStream<Uint8Array>,
  until: number,
  slowMs: number,
  ms: number,
): Promise<number[]> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const lsns: number[] = [];
  let buf = "";
  const end = Date.now() + ms;
  while (Date.now() < end && (lsns.at(-1) ?? 0) < until) {
    const next = await Promise.race([
      reader.read(),
      new Promise<"t">((r) => setTimeout(() => r("t"), end - Date.now())),
    ]);
    if (next === "t" || next.done) break;
    const read = sseBlocks(buf + decoder.decode(next.value, { stream: true }));
    buf = read.rest;
    for (const { fields } of read.blocks) if (fields.id !== undefined) lsns.push(Number(fields.id));
    if (slowMs > 0) await new Promise((r) => setTimeout(r, slowMs));
  }
  await reader.cancel().catch(() => undefined);
  return lsns;
}

describe("the SSE change stream while the client reads", () => {
  // Sequence: CREATE t; open the stream from 0; 60 writes (30 at a time) while
  // the client reads slowly (20 ms a chunk). Every LSN 1..61 once, in order.
  it("delivers every commit once, in order, to a slow reader", async () => {
    const c = freshCluster("a17c-sse");
    await ok(c, "CREATE TABLE t(id INTEGER PRIMARY KEY, v)");
    const res = await exports.default.fetch(
      new Request(`http://cluster.test/v1/clusters/${c}/changes?from=0`, {
        headers: { authorization: `Bearer ${DATA}` },
      }),
    );
    expect(res.status).toBe(200);
    const body = res.body;
    if (body === null) throw new Error("no body");
    const reading = readEvents(body, 61, 20, 8_000);
    for (let round = 0; round < 2; round++) {
      await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          exec(c, [
            { sql: "INSERT INTO t VALUES (?, ?)", params: [round * 30 + i, "x".repeat(50)] },
          ]),
        ),
      );
    }
    const lsns = await reading;
    expect(lsns).toEqual(Array.from({ length: 61 }, (_, i) => i + 1));
  });
});
