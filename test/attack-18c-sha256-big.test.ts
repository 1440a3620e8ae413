/**
 * SURVIVED (attack 18c): core/sha256.ts (node:crypto's createHash over a JS
 * string) hashes the same bytes as WebCrypto over TextEncoder's UTF-8 for
 * large two-byte strings too: surrogate pairs straddling every power-of-two
 * offset (where a chunked UTF-16 -> UTF-8 conversion would split them), lone
 * surrogates at those offsets and at the very end, a one-byte (Latin-1)
 * string with high characters, and a body of 4 M code units.
 */
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../core/sha256";

async function webCryptoHex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

describe("attack 18c: sha256Hex on large strings", () => {
  it("matches WebCrypto with pairs and lone surrogates at chunk-like boundaries", async () => {
    const texts: string[] = [];
    for (let p = 4; p <= 17; p++) {
      const n = 2 ** p;
      for (const shift of [-2, -1, 0, 1]) {
        const at = n + shift;
        if (at < 0) continue;
        // a pair straddling the boundary
        texts.push(`${"é".repeat(at)}\ud83d\ude00${"x".repeat(7)}`);
        texts.push(`${"a".repeat(at)}\ud83d\ude00tail`);
        // lone high, lone low
        texts.push(`${"a".repeat(at)}\ud83d`);
        texts.push(`${"ü".repeat(at)}\ude00z`);
        // a three-byte char straddling byte boundaries
        texts.push(`${"a".repeat(at)}€${"b".repeat(3)}`);
      }
    }
    texts.push("\u00ff".repeat(1 << 20));
    texts.push(`${"€".repeat(1 << 20)}\ud800`);
    texts.push("😀".repeat(1 << 21)); // 4 M code units
    for (const text of texts) {
      const want = await webCryptoHex(text);
      if (sha256Hex(text) !== want) {
        expect({ length: text.length, head: text.slice(0, 4) }).toBe("hash differs");
      }
    }
  }, 60_000);
});
