/**
 * Batons: what ties the HTTP requests of one libSQL stream together. A baton
 * names the stream's object and the request number it is good for, signed
 * with HMAC-SHA256 under a key derived from the deployment's secret, so a
 * client can neither forge one nor point one at another cluster. The stream
 * object takes each number once (single use); a retry of the very request it
 * last answered gets that answer again.
 */
const encoder = new TextEncoder();

export interface Baton {
  stream: string;
  seq: number;
}

async function keyFor(secret: string): Promise<CryptoKey> {
  const base = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  // A key of its own for batons, so a baton's MAC says nothing about the secret's other uses.
  const derived = await crypto.subtle.sign("HMAC", base, encoder.encode("libsql-baton-v1"));
  return crypto.subtle.importKey("raw", derived, { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
    "verify",
  ]);
}

const keys = new Map<string, Promise<CryptoKey>>();

function key(secret: string): Promise<CryptoKey> {
  let known = keys.get(secret);
  if (known === undefined) {
    known = keyFor(secret);
    keys.set(secret, known);
  }
  return known;
}

function base64url(bytes: ArrayBuffer): string {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return null;
  const binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

const signed = (cluster: string, baton: Baton) => `${cluster}\n${baton.stream}\n${baton.seq}`;

export async function signBaton(secret: string, cluster: string, baton: Baton): Promise<string> {
  const mac = await crypto.subtle.sign(
    "HMAC",
    await key(secret),
    encoder.encode(signed(cluster, baton)),
  );
  return `${baton.stream}.${baton.seq}.${base64url(mac)}`;
}

/** The baton's stream and number, or null when it is malformed, forged or for another cluster. */
export async function verifyBaton(
  secret: string,
  cluster: string,
  text: string,
): Promise<Baton | null> {
  const match = /^([0-9a-f]{64})\.(\d{1,15})\.([A-Za-z0-9_-]{43})$/.exec(text);
  if (match === null) return null;
  const [, stream = "", seqText = "", macText = ""] = match;
  const baton = { stream, seq: Number(seqText) };
  const mac = fromBase64url(macText);
  if (mac === null) return null;
  const ok = await crypto.subtle.verify(
    "HMAC",
    await key(secret),
    mac,
    encoder.encode(signed(cluster, baton)),
  );
  return ok ? baton : null;
}
