import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../core/sha256";

/** The request hash as earlier versions computed it: WebCrypto over TextEncoder's UTF-8. */
async function webCryptoHex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Any UTF-16 code units, lone surrogates and NULs included. */
const anyText = fc
  .array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 64 })
  .map((units) => String.fromCharCode(...units));

describe("request hashes", () => {
  it("are the SHA-256 of the text's UTF-8, in hex", () => {
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256Hex("abc")).toBe(
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    );
  });

  it("hash what WebCrypto hashed, bit for bit, whatever the text holds", async () => {
    const texts = [
      "rows\nt\n[]",
      "é😀\u0000\u001f",
      "\ud800",
      "a\udc00b",
      "\udbff\udfff\ud800",
      "x".repeat(100_000),
    ];
    for (const text of texts) expect(sha256Hex(text)).toBe(await webCryptoHex(text));
    await fc.assert(
      fc.asyncProperty(anyText, async (text) => {
        expect(sha256Hex(text)).toBe(await webCryptoHex(text));
      }),
      { numRuns: 500 },
    );
  });
});
