/**
 * Where the log may be truncated: keep `retain` records, never more than
 * `max`, and nothing a replica lacks unless past `max`. A snapshot in progress
 * holds the records after its LSN, but only up to `max` as well: a snapshot
 * whose LSN the log then passes is abandoned and taken again, so no snapshot,
 * however slow or stuck, lets the log grow past its bound.
 */
export function truncationPoint(input: {
  lsn: number;
  minAckedLsn: number;
  retain: number;
  max: number;
  pinnedLsn: number | null;
}): number {
  const floor = input.lsn - input.max;
  const wanted = Math.max(Math.min(input.minAckedLsn, input.lsn - input.retain), floor);
  const pinned =
    input.pinnedLsn === null ? wanted : Math.max(Math.min(wanted, input.pinnedLsn), floor);
  // The last record always stays: the LSN and the log's byte position are read from it.
  return Math.max(0, Math.min(pinned, input.lsn - 1));
}
