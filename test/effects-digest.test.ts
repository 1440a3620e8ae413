import { createHash } from "node:crypto";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { describe, expect, it } from "vitest";
import { type Change, digest, effectsHash, statementEffects } from "../core/row-capture";

const sha = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 32);

describe("effects digests", () => {
  const changes: Change[] = [
    { t: "t", op: "I", nk: "i1", img: "i1\u001fs\u00e9" },
    { t: "t", op: "U", ok: "i1", nk: "i2", img: "i2\u001fr-0.0" },
    { t: "u", op: "D", ok: "i7" },
  ];

  it("are SHA-256 (first 128 bits, hex) of the final images, as node:crypto computes it", () => {
    const text =
      "1:t\u001ei1\u001d\u0000gone\u001c1:t\u001ei2\u001di2\u001fr-0.0\u001c1:u\u001ei7\u001d\u0000gone";
    expect(effectsHash(changes)).toBe(sha(text));
  });

  it("do not depend on the order rows were touched in, only on what is left", () => {
    const shuffled = [changes[2], changes[0], changes[1]] as Change[];
    expect(effectsHash(shuffled)).toBe(effectsHash(changes));
    expect(effectsHash(changes.slice(0, 2))).not.toBe(effectsHash(changes));
  });

  it("for a replayed statement, also count changes() and, when it inserted, the rowid", () => {
    const base = statementEffects([], 1, "9223372036854775807");
    expect(statementEffects([], 1, "42")).not.toBe(base);
    expect(statementEffects([], 2, "9223372036854775807")).not.toBe(base);
    expect(statementEffects([], 1, null)).not.toBe(base);
    expect(statementEffects([], 1, "9223372036854775807")).toBe(base);
  });

  it("are the plain-JS SHA-256 of earlier records bit for bit, whatever the text holds", () => {
    // Records committed before the native hash carry digests made with @noble/hashes.
    const plain = (text: string) => bytesToHex(sha256(utf8ToBytes(text)).subarray(0, 16));
    const texts = [
      "",
      "\u0000",
      "s\u00e9 \u{1f600}",
      "lone \ud800 high",
      "lone \udfff low",
      "\udc00\ud800 reversed",
      "x".repeat(100_000),
      Array.from({ length: 512 }, (_, i) => String.fromCharCode(i * 127)).join(""),
    ];
    for (const text of texts)
      expect(digest(text), JSON.stringify(text.slice(0, 40))).toBe(plain(text));
  });
});
