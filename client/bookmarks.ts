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
 * The bookmark to keep after taking in `next` (a write's answer, noteBookmark,
 * the `bookmark` option): the one with the higher LSN. One this client cannot
 * read (empty, truncated, another format) is ignored: it cannot be compared,
 * and letting it replace the one held would throw away the client's own newer
 * writes, so that its next "bookmark" read is refused or misses them.
 */
export function laterBookmark(current: string | undefined, next: string | undefined) {
  if (next === undefined || bookmarkLsn(next) === null) return current;
  if (current === undefined) return next;
  return (compareBookmarks(current, next) ?? 1) < 0 ? next : current;
}
