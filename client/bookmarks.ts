/**
 * Bookmarks: what a write returns so that a later `"consistency": "bookmark"`
 * read sees it (docs/api.md). To read its own writes a client must send the
 * highest bookmark it holds, and writes answer out of order, so the client has
 * to compare them. The server owns the format (core/protocol.ts,
 * encodeBookmark): "b1." and the LSN in base 36. Compared as strings they sort
 * wrongly ("b1.z" is LSN 35, "b1.10" is 36), so they are compared by LSN.
 */

const FORMAT = /^b1\.([0-9a-z]{1,12})$/;

/** The LSN a bookmark carries, or null for a format this client does not know. */
export function bookmarkLsn(bookmark: string): number | null {
  const digits = FORMAT.exec(bookmark)?.[1];
  if (digits === undefined) return null;
  const lsn = Number.parseInt(digits, 36);
  return Number.isSafeInteger(lsn) ? lsn : null;
}

/** Negative, zero or positive as `a` is older than, as new as or newer than `b`; null if either is unknown. */
export function compareBookmarks(a: string, b: string): number | null {
  const x = bookmarkLsn(a);
  const y = bookmarkLsn(b);
  return x === null || y === null ? null : x - y;
}

/**
 * The bookmark to keep after a write answered with `next`. One in a format
 * this client cannot read (a newer server) wins: the server made it last, and
 * sending a bookmark the server understands is better than sending an old one.
 */
export function laterBookmark(current: string | undefined, next: string): string {
  if (current === undefined) return next;
  const order = compareBookmarks(current, next);
  return order === null || order < 0 ? next : current;
}
