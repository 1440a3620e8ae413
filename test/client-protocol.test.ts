/**
 * The parts of the client that mirror the server's protocol, held to the
 * server's own code: bookmarks against core/protocol.ts, error codes and
 * statuses against core/errors.ts (and the error body workers/errors.ts
 * writes), and the bookmark a client carries from its writes to its reads.
 */
import { describe, expect, it } from "vitest";
import {
  bookmarkLsn,
  ClusterError,
  compareBookmarks,
  ERROR_CLASSES,
  ERROR_STATUS,
  errorFromResponse,
  laterBookmark,
} from "../client/index.ts";
import { ERROR_STATUS as SERVER_STATUS } from "../core/errors";
import { decodeBookmark, encodeBookmark } from "../core/protocol";
import { fakeClient, ok, written } from "./client-fake-fetch";

describe("client bookmarks", () => {
  it("reads the LSN of every bookmark the server makes, as the server does", () => {
    for (const lsn of [
      0,
      1,
      9,
      10,
      35,
      36,
      1295,
      1296,
      123_456_789,
      2 ** 40,
      Number.MAX_SAFE_INTEGER,
    ]) {
      const bookmark = encodeBookmark(lsn);
      expect(bookmarkLsn(bookmark), bookmark).toBe(lsn);
      expect(bookmarkLsn(bookmark)).toBe(decodeBookmark(bookmark));
    }
    for (const other of ["", "b1.", "b2.10", "B1.10", "b1.10 ", "b1.-1", "x"]) {
      expect(bookmarkLsn(other), other).toBe(decodeBookmark(other));
    }
  });

  it("orders bookmarks by LSN, where their strings sort the other way", () => {
    const [a, b] = [encodeBookmark(35), encodeBookmark(36)];
    expect([a, b]).toEqual(["b1.z", "b1.10"]);
    expect(a > b).toBe(true);
    expect(compareBookmarks(a, b)).toBeLessThan(0);
    expect(compareBookmarks(b, a)).toBeGreaterThan(0);
    expect(compareBookmarks(a, a)).toBe(0);
    expect(laterBookmark(b, a)).toBe(b);
    expect(laterBookmark(a, b)).toBe(b);
    expect(laterBookmark(undefined, a)).toBe(a);
    // One it cannot read never replaces one it holds, and is not taken in at all.
    for (const unreadable of ["b2.xyz", "", "b1.", "b1.!", "B1.10"]) {
      expect(laterBookmark(b, unreadable), unreadable).toBe(b);
    }
    expect(laterBookmark(undefined, "")).toBeUndefined();
    expect(laterBookmark(b, undefined)).toBe(b);
  });

  it("keeps the highest bookmark its writes returned, whatever order they answer in, and reads with it", async () => {
    const fake = fakeClient([
      written(36),
      written(35),
      written(2),
      ok({ rows: [], servedBy: "replica-1", appliedLsn: 36 }),
      ok({ rows: [], servedBy: "replica-2", appliedLsn: 40 }),
      ok({ rows: [], servedBy: "replica-3", appliedLsn: 40 }),
    ]);
    expect(fake.client.bookmark).toBeUndefined();
    await fake.client.execute("INSERT INTO t VALUES (1)");
    await fake.client.execute("INSERT INTO t VALUES (2)");
    await fake.client.insertRows("t", [{ a: 3 }]);
    expect(fake.client.bookmark).toBe("b1.10");
    await fake.client.query("SELECT * FROM t", [], { consistency: "bookmark" });
    expect(fake.sent[3]?.body).toMatchObject({ consistency: "bookmark", bookmark: "b1.10" });
    // One from elsewhere counts only if it is later.
    fake.client.noteBookmark(encodeBookmark(20));
    fake.client.noteBookmark(encodeBookmark(40));
    await fake.client.query("SELECT * FROM t", [], { consistency: "bookmark" });
    expect(fake.sent[4]?.body).toMatchObject({ bookmark: "b1.14" });
    // A strong read sends no bookmark; it needs none.
    await fake.client.query("SELECT * FROM t");
    expect(fake.sent[5]?.body).toEqual({ sql: "SELECT * FROM t", params: [] });
  });

  it("a bookmark read before any write goes as any (there is nothing of its own to wait for)", async () => {
    const fake = fakeClient([ok({ rows: [], servedBy: "replica-1", appliedLsn: 0 })]);
    await fake.client.query("SELECT 1", [], { consistency: "bookmark" });
    expect(fake.sent[0]?.body).toEqual({ sql: "SELECT 1", params: [], consistency: "any" });
  });

  it("starts from a bookmark it is given", async () => {
    const fake = fakeClient([ok({ rows: [], servedBy: "m", appliedLsn: 5 })], {
      bookmark: "b1.5",
    });
    await fake.client.query("SELECT 1", [], { consistency: "bookmark" });
    expect(fake.sent[0]?.body).toMatchObject({ consistency: "bookmark", bookmark: "b1.5" });
  });
});

describe("client errors", () => {
  it("knows every code the server has, with the server's status, and a class for each", () => {
    expect(ERROR_STATUS).toEqual(SERVER_STATUS);
    for (const [code, status] of Object.entries(SERVER_STATUS)) {
      const cls = ERROR_CLASSES[code as keyof typeof ERROR_CLASSES];
      const error = new cls("m");
      expect(error).toBeInstanceOf(ClusterError);
      expect(error).toBeInstanceOf(Error);
      expect(error.code).toBe(code);
      expect(error.status).toBe(status);
      expect(error.name).toBe(cls.name);
      // Only these may succeed when sent again.
      expect(error.retryable, code).toBe(
        ["UNAVAILABLE", "NOT_DURABLE", "COMMIT_TIMEOUT"].includes(code),
      );
    }
  });

  it("reads the body the front door writes: details beside code and message", () => {
    const body = JSON.stringify({
      error: { code: "UNKNOWN_TUNABLE", message: "no tunable nope", name: "nope" },
    });
    const error = errorFromResponse(400, body, undefined);
    expect(error).toBeInstanceOf(ERROR_CLASSES.UNKNOWN_TUNABLE);
    expect(error.details).toEqual({ name: "nope" });
    expect(error.message).toBe("no tunable nope");
  });
});
