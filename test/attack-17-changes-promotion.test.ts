/**
 * Adversarial review 17: the change stream across promotions, and filters
 * with odd table names.
 *
 * Promised (docs/api.md "Changes"): every acknowledged commit after `from`,
 * in LSN order, each exactly once, with its LSN as id; "the stream itself
 * survives a node's restart or a failover: it asks again from the last LSN it
 * sent"; `table=t` keeps only those tables' row changes, ASCII-case-insensitive.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type Event, page, sseBlocks } from "./change-helpers";
import { call, DATA, exec, freshCluster, waitUntil } from "./helpers";
import { ok } from "./review-helpers";

async function openStream(c: string, query: string) {
  const response = await exports.default.fetch(
    new Request(`http://cluster.test/v1/clusters/${c}/changes?${query}`, {
      headers: { authorization: `Bearer ${DATA}` },
    }),
  );
  expect(response.status).toBe(200);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const events: { id: number; data: Event }[] = [];
  let buffer = "";
  const pump = (async () => {
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (chunk.done) break;
      const read = sseBlocks(buffer + decoder.decode(chunk.value, { stream: true }));
      buffer = read.rest;
      for (const { fields } of read.blocks) {
        if (fields.data !== undefined && fields.event === "commit") {
          events.push({ id: Number(fields.id), data: JSON.parse(fields.data) });
        }
      }
    }
  })();
  return {
    events,
    async close() {
      await reader.cancel().catch(() => undefined);
      await pump;
    },
  };
}

describe("the change stream across promotions", () => {
  // Sequence: an open SSE stream from 0; 30 writes, with a promotion
  // (POST …/promote, by handover and with force: true) after the 10th and the 20th, writes retried with their
  // key when a promotion turned them away. Every acknowledged LSN must be in
  // the stream, once, in order, with no gap, each id its event's lsn.
  for (const force of [false, true]) {
    it(`gives every acknowledged commit once, in order, across two promotions (force: ${force})`, async () => {
      const c = freshCluster(`a17-stream-promote-${force}`);
      await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
      const stream = await openStream(c, "from=0&heartbeat_ms=1000");
      const acked: number[] = [];
      for (let i = 1; i <= 30; i++) {
        if (i === 11 || i === 21) {
          const p = await call("POST", `/admin/clusters/${c}/promote`, {
            body: force ? { force: true } : {},
          });
          expect(p.status, JSON.stringify(p.body)).toBe(200);
        }
        const write = () =>
          exec(c, [{ sql: "INSERT INTO t VALUES (?, ?)", params: [i, `v${i}`] }], `${c}-${i}`);
        let res = await write();
        for (let n = 0; res.status !== 200 && n < 50; n++) {
          await new Promise((r) => setTimeout(r, 100));
          res = await write();
        }
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        acked.push(res.body.lsn as number);
      }
      const last = acked[acked.length - 1] ?? 0;
      await waitUntil("every acknowledged write streamed", async () =>
        stream.events.some((e) => e.data.lsn >= last),
      );
      await stream.close();
      const seen = stream.events.map((e) => e.data.lsn);
      expect(stream.events.every((e) => e.id === e.data.lsn)).toBe(true);
      expect(new Set(seen).size, "no repeat").toBe(seen.length);
      const first = seen[0] ?? 0;
      expect(seen, "no gap, in order").toEqual(
        Array.from({ length: seen.length }, (_, i) => first + i),
      );
      for (const lsn of acked) expect(seen).toContain(lsn);
      const inserted = stream.events.flatMap((e) =>
        e.data.changes.filter((ch) => ch.op === "insert"),
      );
      expect(inserted.map((ch) => (ch.row as { id: number }).id)).toEqual(
        Array.from({ length: 30 }, (_, i) => i + 1),
      );
      // The terms move forward with the promotions.
      const terms = stream.events.map((e) => e.data.term);
      expect(terms).toEqual([...terms].sort((a, b) => a - b));
      expect(terms[terms.length - 1]).toBe(3);
    });
  }
});

describe("filters with odd table names", () => {
  // Sequence: tables named `a,b`, `Ä` and `ä` (distinct to SQLite, which folds
  // only ASCII), `x"y` and `T` (written to as "t"); a page filtered by each name.
  it("keeps exactly the named table's rows, ASCII case folded only", async () => {
    const c = freshCluster("a17-filter-names");
    await ok(c, 'CREATE TABLE "a,b" (id INTEGER PRIMARY KEY)');
    await ok(c, 'CREATE TABLE "Ä" (id INTEGER PRIMARY KEY)');
    await ok(c, 'CREATE TABLE "ä" (id INTEGER PRIMARY KEY)');
    await ok(c, 'CREATE TABLE "x""y" (id INTEGER PRIMARY KEY)');
    await ok(c, 'CREATE TABLE "T" (id INTEGER PRIMARY KEY)');
    await ok(c, 'INSERT INTO "a,b" VALUES (1)');
    await ok(c, 'INSERT INTO "Ä" VALUES (2)');
    await ok(c, 'INSERT INTO "ä" VALUES (3)');
    await ok(c, 'INSERT INTO "x""y" VALUES (4)');
    await ok(c, 'INSERT INTO "t" VALUES (5)');
    const ids = async (table: string) => {
      const res = await page(c, `from=0&table=${encodeURIComponent(table)}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.events.flatMap((e) => e.changes.map((ch) => (ch.key as { id: number }).id));
    };
    expect(await ids("a,b")).toEqual([1]);
    expect(await ids("Ä")).toEqual([2]);
    expect(await ids("ä")).toEqual([3]);
    expect(await ids('x"y')).toEqual([4]);
    expect(await ids("t")).toEqual([5]);
    expect(await ids("T")).toEqual([5]);
  });
});
