/**
 * The client's retries against a scripted fetch: what is retried and what is
 * not, the Idempotency-Key a write keeps across attempts, the waits chosen
 * (backoff, jitter, Retry-After) and the bounds on attempts and time.
 */
import { describe, expect, it } from "vitest";
import {
  backoffDelay,
  BadRequestError,
  CommitTimeoutError,
  DEFAULT_RETRY,
  InvalidSqlError,
  MisconfiguredError,
  NetworkError,
  NotDurableError,
  parseRetryAfter,
  type RetryPolicy,
  UnavailableError,
  UnexpectedResponseError,
} from "../client/index.ts";
import { error, fakeClient, ok, written } from "./client-fake-fetch";

const keys = (sent: { headers: Record<string, string> }[]) =>
  sent.map((s) => s.headers["idempotency-key"]);

describe("client retries", () => {
  it("retries a 503 UNAVAILABLE after the Retry-After it names, with the same Idempotency-Key", async () => {
    const fake = fakeClient([error(503, "UNAVAILABLE", { "retry-after": "2" }), written(7)]);
    const result = await fake.client.execute("INSERT INTO t VALUES (?)", [1]);
    expect(result.lsn).toBe(7);
    expect(fake.sent).toHaveLength(2);
    // Backoff alone would wait 50 ms (half of 100 with random() = 0.5): the server asked for 2 s.
    expect(fake.waits).toEqual([2000]);
    const [first, second] = keys(fake.sent);
    expect(first).toMatch(/^[0-9a-f-]{36}$/);
    expect(second).toBe(first);
    expect(fake.sent[1]?.body).toEqual(fake.sent[0]?.body);
  });

  it("does not wait for Retry-After when the policy says not to", async () => {
    const fake = fakeClient([error(503, "UNAVAILABLE", { "retry-after": "2" }), written(1)], {
      retry: { honourRetryAfter: false },
    });
    await fake.client.execute("INSERT INTO t VALUES (1)");
    expect(fake.waits).toEqual([50]);
  });

  it("gives each write its own key, and keeps a key the caller names over every retry", async () => {
    const fake = fakeClient([
      written(1),
      written(2),
      error(504, "COMMIT_TIMEOUT"),
      { throws: new TypeError("fetch failed") },
      written(3),
    ]);
    await fake.client.execute("INSERT INTO t VALUES (1)");
    await fake.client.insertRows("t", [{ a: 1 }]);
    await fake.client.execute("INSERT INTO t VALUES (3)", [], { idempotencyKey: "mine-3" });
    const [a, b, ...rest] = keys(fake.sent);
    expect(a).not.toBe(b);
    expect(rest).toEqual(["mine-3", "mine-3", "mine-3"]);
  });

  it("retries NOT_DURABLE, COMMIT_TIMEOUT, network errors and a proxy's 502, and nothing else", async () => {
    const fake = fakeClient([
      error(503, "NOT_DURABLE", { "retry-after": "1" }, { lsn: 4 }),
      error(504, "COMMIT_TIMEOUT", {}, { lsn: 4 }),
      { throws: new TypeError("fetch failed") },
      { status: 502, body: "<html>Bad Gateway</html>" },
      ok({ lsn: 4, results: [], bookmark: "b1.4", replayed: true }),
    ]);
    const seen: string[] = [];
    const result = await fake.client.execute("INSERT INTO t VALUES (1)", [], {
      hooks: { onRetry: ({ error }) => seen.push(error.code) },
    });
    expect(result.replayed).toBe(true);
    expect(seen).toEqual(["NOT_DURABLE", "COMMIT_TIMEOUT", "NETWORK_ERROR", "UNEXPECTED_RESPONSE"]);
    expect(new Set(keys(fake.sent)).size).toBe(1);
  });

  it.each([
    [400, "BAD_REQUEST", BadRequestError],
    [400, "INVALID_SQL", InvalidSqlError],
    [500, "MISCONFIGURED", MisconfiguredError],
  ])(
    "sends a request that failed with %i %s once, and throws its class",
    async (status, code, cls) => {
      const fake = fakeClient([error(status, code, { "retry-after": "1" })]);
      const thrown = await fake.client.execute("INSERT INTO nope VALUES (1)").catch((e) => e);
      expect(thrown).toBeInstanceOf(cls);
      expect(thrown.attempts).toBe(1);
      expect(fake.sent).toHaveLength(1);
      expect(fake.waits).toEqual([]);
    },
  );

  it("does not retry a 4xx the proxy answered without the API's body", async () => {
    const fake = fakeClient([{ status: 405, body: "Method Not Allowed" }]);
    const thrown = await fake.client.admin.status().catch((e) => e);
    expect(thrown).toBeInstanceOf(UnexpectedResponseError);
    expect(thrown.status).toBe(405);
    expect(fake.sent).toHaveLength(1);
  });

  it("stops after maxAttempts and throws the last error with the attempts made", async () => {
    const fake = fakeClient(
      Array.from({ length: 3 }, () => error(503, "UNAVAILABLE")),
      { retry: { maxAttempts: 3 } },
    );
    const thrown = await fake.client.query("SELECT 1").catch((e) => e);
    expect(thrown).toBeInstanceOf(UnavailableError);
    expect(thrown.attempts).toBe(3);
    expect(fake.sent).toHaveLength(3);
    // Exponential: ceilings 100 and 200, times random() = 0.5.
    expect(fake.waits).toEqual([50, 100]);
  });

  it("starts no retry whose wait would end past the deadline", async () => {
    const fake = fakeClient(
      Array.from({ length: 10 }, () => error(503, "UNAVAILABLE", { "retry-after": "1" })),
      { retry: { maxAttempts: 10, deadlineMs: 2500 } },
    );
    const thrown = await fake.client.query("SELECT 1").catch((e) => e);
    expect(thrown).toBeInstanceOf(UnavailableError);
    // Waits of 1 s end at 1 s and 2 s; a third would end at 3 s, past 2.5 s.
    expect(fake.waits).toEqual([1000, 1000]);
    expect(thrown.attempts).toBe(3);
  });

  it("sends calls that act once per request once, unless the call asks for retries", async () => {
    const fake = fakeClient([
      error(503, "UNAVAILABLE"),
      error(503, "UNAVAILABLE"),
      ok({ master: "replica-1", term: 2 }),
    ]);
    await expect(fake.client.admin.promote()).rejects.toBeInstanceOf(UnavailableError);
    expect(fake.sent).toHaveLength(1);
    const promoted = await fake.client.admin.promote({}, { retry: { maxAttempts: 2 } });
    expect(promoted).toEqual({ master: "replica-1", term: 2 });
    expect(fake.sent).toHaveLength(3);
  });

  it("retry: false sends one attempt of a call that would otherwise be retried", async () => {
    const fake = fakeClient([{ throws: new TypeError("fetch failed") }]);
    const thrown = await fake.client.query("SELECT 1", [], { retry: false }).catch((e) => e);
    expect(thrown).toBeInstanceOf(NetworkError);
    expect(fake.sent).toHaveLength(1);
  });

  it("tells each hook about every attempt and every retry", async () => {
    const fake = fakeClient([
      error(503, "UNAVAILABLE"),
      { throws: new Error("reset") },
      written(9),
    ]);
    const events: string[] = [];
    await fake.client.execute("INSERT INTO t VALUES (1)", [], {
      idempotencyKey: "k",
      hooks: {
        onAttempt: (a) => events.push(`attempt ${a.attempt} ${a.idempotencyKey}`),
        onRetry: (r) => events.push(`retry ${r.attempt} ${r.error.code} ${r.delayMs}`),
      },
    });
    expect(events).toEqual([
      "attempt 1 k",
      "retry 1 UNAVAILABLE 50",
      "attempt 2 k",
      "retry 2 NETWORK_ERROR 100",
      "attempt 3 k",
    ]);
  });

  it("gives up at once when the caller aborts, with the caller's reason", async () => {
    const controller = new AbortController();
    const fake = fakeClient([error(503, "UNAVAILABLE"), written(1)], {
      sleep: async () => {
        controller.abort(new Error("caller gave up"));
        throw controller.signal.reason;
      },
    });
    const thrown = await fake.client
      .execute("INSERT INTO t VALUES (1)", [], { signal: controller.signal })
      .catch((e) => e);
    expect(thrown.message).toBe("caller gave up");
    expect(fake.sent).toHaveLength(1);
  });

  it("times out an attempt that does not answer, and retries it as no answer", async () => {
    let calls = 0;
    const fake = fakeClient([], {
      attemptTimeoutMs: 20,
      fetch: (_input, init) => {
        calls++;
        if (calls === 2)
          return Promise.resolve(Response.json({ rows: [], servedBy: "m", appliedLsn: 0 }));
        // Never answers; only the attempt's abort ends it.
        return new Promise((_, reject) =>
          init.signal?.addEventListener("abort", () => reject(init.signal?.reason)),
        );
      },
    });
    const seen: unknown[] = [];
    const result = await fake.client.query("SELECT 1", [], {
      hooks: { onRetry: ({ error }) => seen.push(error) },
    });
    expect(result.servedBy).toBe("m");
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeInstanceOf(NetworkError);
    expect((seen[0] as NetworkError).timedOut).toBe(true);
  });
});

describe("backoff", () => {
  const policy: RetryPolicy = { ...DEFAULT_RETRY, baseDelayMs: 100, maxDelayMs: 1000 };

  it("full jitter stays in [0, min(max, base * 2^(retry-1))) and covers it", () => {
    for (const retry of [1, 2, 3, 4, 5, 8]) {
      const ceiling = Math.min(1000, 100 * 2 ** (retry - 1));
      expect(backoffDelay(retry, policy, () => 0)).toBe(0);
      expect(backoffDelay(retry, policy, () => 0.999999)).toBe(ceiling - 1);
      let seed = retry;
      const random = () => {
        seed = (seed * 16807) % 2147483647;
        return seed / 2147483647;
      };
      const delays = Array.from({ length: 500 }, () => backoffDelay(retry, policy, random));
      expect(Math.min(...delays)).toBeGreaterThanOrEqual(0);
      expect(Math.max(...delays)).toBeLessThan(ceiling);
      // Spread over the range, not bunched at one end.
      expect(Math.max(...delays) - Math.min(...delays)).toBeGreaterThan(ceiling * 0.8);
    }
  });

  it("without jitter waits the ceiling itself", () => {
    const none: RetryPolicy = { ...policy, jitter: "none" };
    expect([1, 2, 3, 4, 5, 6].map((r) => backoffDelay(r, none, () => 0.5))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
  });

  it("reads Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfter("3", now)).toBe(3000);
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:05 GMT", now)).toBe(5000);
    expect(parseRetryAfter("Wed, 31 Dec 2025 23:59:00 GMT", now)).toBe(0);
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter("soon", now)).toBeUndefined();
  });
});

describe("error answers", () => {
  it("carries the details beside code and message, and the status", async () => {
    const fake = fakeClient([error(503, "NOT_DURABLE", {}, { lsn: 12 })], { retry: false });
    const thrown = await fake.client.execute("INSERT INTO t VALUES (1)").catch((e) => e);
    expect(thrown).toBeInstanceOf(NotDurableError);
    expect(thrown).toMatchObject({ code: "NOT_DURABLE", status: 503, details: { lsn: 12 } });
    expect(thrown.message).toBe("NOT_DURABLE (scripted)");
  });

  it("a code this client does not know is a plain ClusterError, not retried", async () => {
    const fake = fakeClient([error(503, "SOMETHING_NEW")]);
    const thrown = await fake.client.query("SELECT 1").catch((e) => e);
    expect(thrown.constructor.name).toBe("ClusterError");
    expect(thrown).toMatchObject({ code: "SOMETHING_NEW", status: 503, retryable: false });
    expect(fake.sent).toHaveLength(1);
  });

  it("CommitTimeoutError is what a 504 COMMIT_TIMEOUT becomes once retries run out", async () => {
    const fake = fakeClient([error(504, "COMMIT_TIMEOUT"), error(504, "COMMIT_TIMEOUT")], {
      retry: { maxAttempts: 2 },
    });
    await expect(fake.client.execute("INSERT INTO t VALUES (1)")).rejects.toBeInstanceOf(
      CommitTimeoutError,
    );
  });
});
