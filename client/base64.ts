/**
 * Base64 for BLOB and non-UTF-8 TEXT values. btoa/atob exist in Workers, Node
 * and browsers alike, so the client needs no Buffer and no dependency.
 */

/** Chunked, so a large BLOB does not overflow the argument list of fromCharCode. */
export function base64FromBytes(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

export function bytesFromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}
