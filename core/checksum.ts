/**
 * Table checksums for verify: a streaming 64-bit hash (two FNV-1a lanes with
 * different offsets) over a canonical encoding of each row, in rowid order.
 * Synchronous on purpose: the rows are read and hashed in one step, so no
 * other request can interleave a write between reading and hashing.
 */
export class RowHasher {
  private a = 0x811c9dc5;
  private b = 0x01000193 ^ 0x5bd1e995;
  rows = 0;

  addRow(row: Record<string, unknown>): void {
    this.rows++;
    this.addString(canonicalRow(row));
    this.addString("\u001e");
  }

  addString(text: string): void {
    let { a, b } = this;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
    }
    this.a = a;
    this.b = b;
  }

  digest(): string {
    const hex = (n: number) => (n >>> 0).toString(16).padStart(8, "0");
    return hex(this.a) + hex(this.b);
  }
}

export function canonicalRow(row: Record<string, unknown>): string {
  const parts: string[] = [];
  // Length prefixes make the encoding unambiguous whatever characters the text holds.
  for (const [key, value] of Object.entries(row)) {
    parts.push(`${key.length}:${key}=${canonicalValue(value)}`);
  }
  return parts.join("\u001f");
}

function canonicalValue(value: unknown): string {
  if (value === null || value === undefined) return "N";
  if (typeof value === "number") return `n${value}`;
  if (typeof value === "string") return `s${value.length}:${value}`;
  if (value instanceof ArrayBuffer) {
    return `b${[...new Uint8Array(value)].map((x) => x.toString(16).padStart(2, "0")).join("")}`;
  }
  return `?${String(value)}`;
}
