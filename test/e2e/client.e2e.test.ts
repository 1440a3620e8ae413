/**
 * The typed client (client/) in Node against a real `wrangler dev`: a write,
 * its retry after a lost answer (replayed by the server, not run twice), a
 * bookmark read and a strong read that see it, the admin plane, a real 503
 * retried after its Retry-After, the error class of each refusal, and a
 * cluster that sleeps, wakes and is deleted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DosqliteClient,
  type FetchLike,
  InvalidSqlError,
  NotFoundError,
  UnauthorizedError,
  UnavailableError,
  UnknownTunableError,
  bookmarkLsn,
} from "../../client/index.ts";
import { type DevServer, startDevServer } from "./dev-server";

const CLUSTER = "client-e2e";

describe("the typed client against `wrangler dev`", () => {
  let server: DevServer;
  /** Every request the client sent, and a switch that loses the next answer on its way back. */
  const sent: { path: string; headers: Record<string, string>; body: unknown }[] = [];
  let loseNextAnswer = false;
  let lostAnswer: unknown;
  const recordingFetch: FetchLike = async (input, init) => {
    sent.push({
      path: new URL(input).pathname,
      headers: { ...(init.headers as Record<string, string>) },
      body: typeof init.body === "string" ? JSON.parse(init.body) : undefined,
    });
    const response = await fetch(input, init);
    if (!loseNextAnswer) return response;
    // The server did the work and answered; the answer never reaches the client.
    loseNextAnswer = false;
    lostAnswer = await response.json();
    throw new TypeError("fetch failed: connection reset after the request was sent");
  };
  let client: DosqliteClient;

  beforeAll(async () => {
    server = await startDevServer();
    client = new DosqliteClient({
      url: server.url,
      cluster: CLUSTER,
      token: "dev-data-token",
      adminToken: "dev-admin-token",
      fetch: recordingFetch,
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("writes, and a retry after a lost answer is replayed from the saved result, not run again", async () => {
    await client.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER, big INTEGER, b BLOB)");
    const created = client.bookmark;
    expect(created).toBeDefined();

    loseNextAnswer = true;
    const before = sent.length;
    const result = await client.execute(
      "INSERT INTO kv (k, v, big, b) VALUES (?, ?, ?, ?)",
      ["a", 1, 2n ** 62n + 1n, new Uint8Array([0, 255])],
      { retry: { baseDelayMs: 10 } },
    );
    const attempts = sent.slice(before);
    expect(attempts).toHaveLength(2);
    expect(attempts[1]?.headers["idempotency-key"]).toBe(attempts[0]?.headers["idempotency-key"]);
    expect(lostAnswer).toMatchObject({ lsn: result.lsn, bookmark: result.bookmark });
    expect(result.replayed).toBe(true);
    expect(result.results[0]).toMatchObject({ rowsWritten: 1 });
    expect(client.bookmark).toBe(result.bookmark);
    expect(bookmarkLsn(result.bookmark)).toBe(result.lsn);

    const count = await client.query("SELECT count(*) AS n FROM kv", [], { replica: "master" });
    expect(count.rows).toEqual([{ n: 1 }]);
  });

  it("a bookmark read carries the highest bookmark and sees the write; so does a strong read", async () => {
    const written = await client.insertRows("kv", [{ k: "b", v: 2 }]);
    const before = sent.length;
    const mine = await client.query("SELECT k, v, big, b FROM kv ORDER BY k", [], {
      consistency: "bookmark",
    });
    expect(sent[before]?.body).toMatchObject({
      consistency: "bookmark",
      bookmark: written.bookmark,
    });
    expect(mine.appliedLsn).toBeGreaterThanOrEqual(written.lsn);
    expect(mine.rows).toEqual([
      { k: "a", v: 1, big: { int: (2n ** 62n + 1n).toString() }, b: { base64: "AP8=" } },
      { k: "b", v: 2, big: null, b: null },
    ]);

    const strong = await client.query("SELECT k FROM kv ORDER BY k", [], { format: "arrays" });
    expect(strong).toMatchObject({ columns: ["k"], rows: [["a"], ["b"]] });
    expect(strong.appliedLsn).toBeGreaterThanOrEqual(written.lsn);
  });

  it("the admin plane: status, tunables, replicas, verify and metrics", async () => {
    const status = await client.admin.status();
    expect(status.cluster).toBe(CLUSTER);
    expect(status.master.lsn).toBe(bookmarkLsn(client.bookmark ?? ""));
    expect(status.replicas).toHaveLength(4);

    const tunables = await client.admin.patchTunables({ rep_timeout_ms: 1500 });
    expect(tunables.rep_timeout_ms.value).toBe(1500);
    expect((await client.admin.tunables()).rep_timeout_ms).toMatchObject({ value: 1500 });

    const listed = await client.admin.replicas();
    expect(listed.replicas).toEqual(status.replicas.map((r) => r.id));

    const verify = await client.admin.verify();
    expect(verify.agree, verify.mismatches.join("; ")).toBe(true);
    expect(verify.lsn).toBeGreaterThanOrEqual(status.master.lsn);
    // Prometheus text, not JSON.
    expect(await client.admin.metrics()).toContain(`dosql_commits_total{cluster="${CLUSTER}"}`);
  });

  it("a read pinned to a stopped replica is retried after the server's Retry-After, then throws UnavailableError", async () => {
    await client.admin.patchTunables({ debug_fault_injection: true });
    await client.admin.faults.stopReplica("replica-1");
    try {
      const waits: number[] = [];
      const thrown = await client
        .query("SELECT k FROM kv", [], {
          replica: "replica-1",
          retry: { maxAttempts: 2 },
          hooks: { onRetry: ({ delayMs }) => waits.push(delayMs) },
        })
        .catch((e) => e);
      expect(thrown).toBeInstanceOf(UnavailableError);
      expect(thrown).toMatchObject({ status: 503, attempts: 2, retryAfterMs: 1000 });
      expect(waits).toEqual([1000]);
    } finally {
      await client.admin.faults.startReplica("replica-1");
    }
  });

  it("each refusal throws its class, and none is retried", async () => {
    const before = sent.length;
    const sql = await client.execute("INSERT INTO nope VALUES (1)").catch((e) => e);
    expect(sql).toBeInstanceOf(InvalidSqlError);
    expect(sql).toMatchObject({ code: "INVALID_SQL", status: 400, attempts: 1 });
    expect(sent.length - before).toBe(1);

    const tunable = await client.admin.patchTunables({ nope: 1 } as never).catch((e) => e);
    expect(tunable).toBeInstanceOf(UnknownTunableError);
    expect(tunable.details).toMatchObject({ names: ["nope"] });

    const replica = await client.query("SELECT 1", [], { replica: "replica-99" }).catch((e) => e);
    expect(replica).toBeInstanceOf(NotFoundError);

    const stranger = new DosqliteClient({ url: server.url, cluster: CLUSTER, token: "wrong" });
    await expect(stranger.query("SELECT 1")).rejects.toBeInstanceOf(UnauthorizedError);
    // A data token on an admin route.
    await expect(
      new DosqliteClient({ url: server.url, token: "dev-data-token" }).admin.status(),
    ).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it("a cluster falls asleep, wakes for a write and a strong read on a replica, and is deleted", async () => {
    const db = new DosqliteClient({
      url: server.url,
      cluster: "client-e2e-idle",
      token: "dev-data-token",
      adminToken: "dev-admin-token",
    });
    await db.execute("CREATE TABLE t (v TEXT)");
    await db.admin.patchTunables({ idle_after_ms: 500 });
    await db.execute("INSERT INTO t VALUES ('a')");
    const asleep = async () =>
      ((await db.admin.status()) as unknown as { master: { idle: { asleep: boolean } } }).master
        .idle.asleep;
    const until = Date.now() + 15_000;
    while (!(await asleep()) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(await asleep()).toBe(true);
    await new Promise((r) => setTimeout(r, 700));
    // Every lease has run out: the replica asks the master for one and serves the read itself.
    const read = await db.query("SELECT count(*) AS n FROM t", [], {
      consistency: "strong",
      replica: "replica-2",
    });
    expect(read.servedBy).toBe("replica-2");
    expect(read.rows).toEqual([{ n: 1 }]);
    await db.execute("INSERT INTO t VALUES ('b')");
    expect(await asleep()).toBe(false);

    await expect(db.admin.deleteCluster("not-this-one")).rejects.toMatchObject({ status: 400 });
    const deleted = await db.admin.deleteCluster("client-e2e-idle");
    expect(deleted.members[0]).toBe("node-0");
    expect(deleted.members).toContain("replica-4");
    // The name is free: a new, empty cluster.
    await expect(db.query("SELECT * FROM t")).rejects.toBeInstanceOf(InvalidSqlError);
    await db.execute("CREATE TABLE t (v TEXT)");
  });
});
