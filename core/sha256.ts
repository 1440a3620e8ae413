/**
 * SHA-256 of a text's UTF-8, in hex, synchronously: node:crypto's native hash,
 * which in workerd takes a few microseconds where WebCrypto's digest costs a
 * promise, a turn and a copy for every request. The bytes are the text's
 * UTF-8 as TextEncoder makes them (a lone surrogate as U+FFFD), so a request
 * hashed by an earlier version that used WebCrypto hashes the same here
 * (test/sha256.test.ts), and a retry across an upgrade still matches its
 * saved result.
 */
import { createHash } from "node:crypto";

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}
