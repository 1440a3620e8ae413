/**
 * Long strings in the synchronous KV API (`ctx.storage.kv`), whose rows live
 * in a table no SQL can name (`__cf_kv`) and commit in the same transaction as
 * the SQL around them. A value is kept under its key when it is small, else
 * split into parts under `~<key>#<n>`: one stored value stays far below the
 * 2 MB SQLite-backed Durable Objects allow per row. Parts sort apart from
 * heads (`~` prefix), so a list of heads by prefix never meets a part.
 */
const PART_CHARS = 256 * 1024;

function partKey(key: string, i: number): string {
  return `~${key}#${i}`;
}

export interface Head<M> {
  meta: M;
  text?: string;
  parts?: number;
}

export function putText<M>(kv: SyncKvStorage, key: string, meta: M, text: string): void {
  if (text.length <= PART_CHARS) {
    kv.put(key, { meta, text } satisfies Head<M>);
    return;
  }
  const parts = Math.ceil(text.length / PART_CHARS);
  for (let i = 0; i < parts; i++) {
    kv.put(partKey(key, i), text.slice(i * PART_CHARS, (i + 1) * PART_CHARS));
  }
  kv.put(key, { meta, parts } satisfies Head<M>);
}

export function getMeta<M>(kv: SyncKvStorage, key: string): M | undefined {
  return (kv.get(key) as Head<M> | undefined)?.meta;
}

export function getText<M>(kv: SyncKvStorage, key: string): { meta: M; text: string } | undefined {
  const head = kv.get(key) as Head<M> | undefined;
  return head === undefined ? undefined : textOf(kv, key, head);
}

/** The text under a head already read (a listing's value): its parts only are read. */
export function textOf<M>(
  kv: SyncKvStorage,
  key: string,
  head: Head<M>,
): { meta: M; text: string } {
  if (head.text !== undefined) return { meta: head.meta, text: head.text };
  let text = "";
  for (let i = 0; i < (head.parts ?? 0); i++) text += String(kv.get(partKey(key, i)) ?? "");
  return { meta: head.meta, text };
}

export function deleteText(kv: SyncKvStorage, key: string): void {
  const head = kv.get(key) as Head<unknown> | undefined;
  if (head === undefined) return;
  for (let i = 0; i < (head.parts ?? 0); i++) kv.delete(partKey(key, i));
  kv.delete(key);
}

/** A number as a fixed-width key part, so keys sort as the numbers do. */
export function sortable(n: number): string {
  return String(n).padStart(16, "0");
}
