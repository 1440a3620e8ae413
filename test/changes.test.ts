/**
 * The change stream, GET /v1/clusters/{cluster}/changes: every acknowledged
 * commit after an LSN, in order, exactly once, as Server-Sent Events (resumed
 * with Last-Event-ID) or JSON pages; never a commit not yet acknowledged; 410
 * once the log passed the LSN asked for; a stream that outlives the master's
 * restart without a gap or a repeat.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type Event, type Page, page, sseBlocks } from "./change-helpers";
import { call, DATA, exec, freshCluster, patchTunables, status, waitUntil } from "./helpers";
import { ok } from "./review-helpers";

/** An SSE stream's events as they arrive, parsed; `close` ends it. */
async function openStream(c: string, query: string, headers: Record<string, string> = {}) {
  const response = await exports.default.fetch(
    new Request(`http://cluster.test/v1/clusters/${c}/changes?${query}`, {
      headers: { authorization: `Bearer ${DATA}`, ...headers },
    }),
  );
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const events: { id: string; event: string; data: Event }[] = [];
  const comments: string[] = [];
  let buffer = "";
  let done = false;
  const pump = (async () => {
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (chunk.done) break;
      const read = sseBlocks(buffer + decoder.decode(chunk.value, { stream: true }));
      buffer = read.rest;
      for (const { fields, comments: lines } of read.blocks) {
        comments.push(...lines);
        if (fields.data !== undefined) {
          events.push({
            id: fields.id ?? "",
            event: fields.event ?? "",
            data: JSON.parse(fields.data),
          });
        }
      }
    }
    done = true;
  })();
  return {
    events,
    comments,
    get done() {
      return done;
    },
    async close() {
      await reader.cancel().catch(() => undefined);
      await pump;
    },
  };
}

async function lsnOf(res: { status: number; body: Record<string, unknown> }): Promise<number> {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.lsn as number;
}

describe("the change stream", () => {
  it("gives each acknowledged commit once, in order, with exact values, keys and statements", async () => {
    const c = freshCluster("changes-page");
    const create = await lsnOf(
      await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v, r)" }]),
    );
    const insert = await lsnOf(
      await exec(c, [
        { sql: "INSERT INTO t VALUES (1, ?, 2.0)", params: [{ int: "9007199254740993" }] },
        { sql: "INSERT INTO t VALUES (2, x'00ff', ?)", params: [{ real: "-0.0" }] },
      ]),
    );
    const update = await lsnOf(
      await exec(c, [{ sql: "UPDATE t SET id = 3, v = 'moved' WHERE id = 2" }]),
    );
    const remove = await lsnOf(await exec(c, [{ sql: "DELETE FROM t WHERE id = 1" }]));
    const res = await page(c, "from=0");
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const events = res.body.events;
    expect(events.map((e) => e.lsn)).toEqual([create, insert, update, remove]);
    expect(res.body.next).toBe(remove);
    expect(events[0]?.statements[0]?.sql).toContain("CREATE TABLE t");
    expect(events[1]?.changes).toEqual([
      {
        table: "t",
        op: "insert",
        key: { id: 1 },
        row: { id: 1, v: { int: "9007199254740993" }, r: { real: 2 } },
      },
      {
        table: "t",
        op: "insert",
        key: { id: 2 },
        row: { id: 2, v: { base64: "AP8=" }, r: { real: "-0.0" } },
      },
    ]);
    expect(events[2]?.changes).toEqual([
      {
        table: "t",
        op: "update",
        key: { id: 3 },
        oldKey: { id: 2 },
        row: { id: 3, v: "moved", r: { real: "-0.0" } },
      },
    ]);
    expect(events[3]?.changes).toEqual([{ table: "t", op: "delete", key: { id: 1 } }]);
    expect(events.every((e) => e.term === 1 && e.ts > 0)).toBe(true);
    // Paging: from the middle, and a small page.
    const later = await page(c, `from=${insert}&limit=1`);
    expect(later.body.events.map((e) => e.lsn)).toEqual([update]);
    expect(later.body.next).toBe(update);
  });

  it("filters by table, leaving statements out", async () => {
    const c = freshCluster("changes-table");
    await ok(c, "CREATE TABLE a (x)");
    await ok(c, "CREATE TABLE b (y)");
    await exec(c, [{ sql: "INSERT INTO a VALUES (1)" }, { sql: "INSERT INTO b VALUES (2)" }]);
    await ok(c, "INSERT INTO b VALUES (3)");
    const res = await call<Page>("GET", `/v1/clusters/${c}/changes?format=json&table=a`);
    expect(res.body.events.length).toBe(1);
    expect(res.body.events[0]?.changes.map((ch) => ch.table)).toEqual(["a"]);
    expect(res.body.events[0]?.statements).toEqual([]);
    const both = await call<Page>("GET", `/v1/clusters/${c}/changes?format=json&table=a&table=b`);
    expect(both.body.events.length).toBe(2);
  });

  it("never gives a commit before every coherent replica acknowledged it", async () => {
    const c = freshCluster("changes-acked");
    await ok(c, "CREATE TABLE t (x)");
    expect((await patchTunables(c, { debug_ack_delay_ms: 1500 })).status).toBe(200);
    const pending = exec(c, [{ sql: "INSERT INTO t VALUES (1)" }]);
    await new Promise((r) => setTimeout(r, 400));
    const master = (await status(c)).body.master as unknown as { lsn: number };
    const before = await page(c, "from=0");
    expect(before.body.events.every((e) => e.lsn < master.lsn)).toBe(true);
    expect(before.body.acknowledged).toBeLessThan(master.lsn);
    const lsn = await lsnOf(await pending);
    await waitUntil("the commit shows in the stream", async () =>
      (await page(c, "from=0")).body.events.some((e) => e.lsn === lsn),
    );
    await patchTunables(c, { debug_ack_delay_ms: 0 });
  });

  it("answers 410 GONE, naming the earliest LSN, once the log passed the LSN asked for", async () => {
    const c = freshCluster("changes-gone");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY)");
    expect((await patchTunables(c, { log_retain_records: 5 })).status).toBe(200);
    for (let i = 1; i <= 40; i++) await ok(c, `INSERT INTO t VALUES (${i})`);
    let truncated = 0;
    await waitUntil("the master truncated its log", async () => {
      truncated = ((await status(c)).body.master as unknown as { truncatedThrough: number })
        .truncatedThrough;
      return truncated >= 20;
    });
    // Replicas truncate their logs at the master's point with its next message.
    let gone = await page(c, "from=0");
    await waitUntil("the stream says the start is gone", async () => {
      gone = await page(c, "from=0");
      return gone.status === 410;
    });
    const error = gone.body as unknown as {
      error: { code: string; earliest: number; message: string };
    };
    expect(error.error.code).toBe("GONE");
    expect(error.error.earliest).toBeGreaterThan(truncated);
    expect(error.error.message).toMatch(/export/);
    const from = error.error.earliest - 1;
    const resumed = await page(c, `from=${from}`);
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(resumed.body.events[0]?.lsn).toBe(from + 1);
  });

  it("refuses a bad from, Last-Event-ID, limit or format with 400", async () => {
    const c = freshCluster("changes-bad");
    for (const query of [
      "from=-1",
      "from=abc",
      "from=1.5",
      "limit=0",
      "limit=5000",
      "format=xml",
      "heartbeat_ms=5",
    ]) {
      const res = await call("GET", `/v1/clusters/${c}/changes?${query}`);
      expect(res.status, query).toBe(400);
    }
    const res = await call("GET", `/v1/clusters/${c}/changes`, {
      headers: { "last-event-id": "x" },
    });
    expect(res.status).toBe(400);
  });

  it("streams as SSE, resumes with Last-Event-ID, and keeps an idle stream alive", async () => {
    const c = freshCluster("changes-sse");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY)");
    const stream = await openStream(c, "from=0&heartbeat_ms=1000");
    const lsns: number[] = [];
    for (let i = 1; i <= 5; i++)
      lsns.push(await lsnOf(await exec(c, [{ sql: `INSERT INTO t VALUES (${i})` }])));
    await waitUntil("five inserts streamed", async () => stream.events.length >= 6);
    expect(stream.events.map((e) => Number(e.id))).toEqual([(lsns[0] ?? 0) - 1, ...lsns]);
    expect(stream.events.every((e) => e.event === "commit" && Number(e.id) === e.data.lsn)).toBe(
      true,
    );
    await waitUntil("a heartbeat comment", async () => stream.comments.includes(": keep-alive"));
    await stream.close();
    const resumed = await openStream(c, "from=0", { "last-event-id": String(lsns[2]) });
    await waitUntil("the rest streamed", async () => resumed.events.length >= 2);
    expect(resumed.events.map((e) => e.data.lsn)).toEqual(lsns.slice(3));
    await resumed.close();
  });

  it("carries on across a master crash with no gap and no repeat", async () => {
    const c = freshCluster("changes-crash");
    await ok(c, "CREATE TABLE t (id INTEGER PRIMARY KEY)");
    expect((await patchTunables(c, { debug_fault_injection: true })).status).toBe(200);
    const stream = await openStream(c, "from=0");
    const acked: number[] = [];
    for (let i = 1; i <= 30; i++) {
      if (i === 10 || i === 20) {
        expect((await call("POST", `/admin/clusters/${c}/master/crash`)).status).toBe(202);
      }
      const res = await exec(c, [{ sql: "INSERT INTO t VALUES (?)", params: [i] }], `k-${c}-${i}`);
      if (res.status === 200) acked.push(res.body.lsn as number);
      else {
        const retry = await exec(
          c,
          [{ sql: "INSERT INTO t VALUES (?)", params: [i] }],
          `k-${c}-${i}`,
        );
        acked.push(await lsnOf(retry));
      }
    }
    const last = acked[acked.length - 1] ?? 0;
    await waitUntil("every acknowledged write streamed", async () =>
      stream.events.some((e) => e.data.lsn >= last),
    );
    const seen = stream.events.map((e) => e.data.lsn);
    expect(new Set(seen).size, "no repeat").toBe(seen.length);
    expect(seen, "in order").toEqual([...seen].sort((a, b) => a - b));
    for (const lsn of acked) expect(seen, `acknowledged LSN ${lsn}`).toContain(lsn);
    // No gap: every LSN from the first to the last the stream gave is there.
    const first = seen[0] ?? 0;
    expect(seen).toEqual(Array.from({ length: seen.length }, (_, i) => first + i));
    await stream.close();
  });
});
