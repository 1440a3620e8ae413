/**
 * Pure analysis of a crash run: throughput before and after, how soon inserts
 * succeed again, and whether every acknowledged insert survived exactly once.
 */

export interface Success {
  /** When the attempt that succeeded was sent, and when its answer arrived (ms). */
  sentAt: number;
  doneAt: number;
}

export interface Recovery {
  beforePerSecond: number;
  afterPerSecond: number;
  /** Seconds from the crash to the first success of a request sent after it. */
  firstSuccessAfterS: number | null;
  /** Seconds from the crash to the start of the first 1 s window at >= 90% of the rate before. */
  back90AfterS: number | null;
}

const WINDOW_MS = 1000;
const STEP_MS = 100;

/**
 * `from` is the end of the warm-up, `crashAt` when the crash was accepted, `end`
 * when the load stopped. "After" is the rate over the second half of the time
 * after the crash, once recovery is over.
 */
export function recovery(
  successes: Success[],
  from: number,
  crashAt: number,
  end: number,
): Recovery {
  const done = successes.map((s) => s.doneAt).sort((a, b) => a - b);
  const count = (a: number, b: number) => done.filter((t) => t >= a && t < b).length;
  const perSecond = (a: number, b: number) =>
    b <= a ? Number.NaN : (count(a, b) * 1000) / (b - a);
  const before = perSecond(from, crashAt);
  const afterFrom = crashAt + (end - crashAt) / 2;
  const first = successes
    .filter((s) => s.sentAt >= crashAt)
    .reduce<number | null>((min, s) => (min === null || s.doneAt < min ? s.doneAt : min), null);
  let back90: number | null = null;
  for (let t = crashAt; t + WINDOW_MS <= end; t += STEP_MS) {
    if (count(t, t + WINDOW_MS) >= 0.9 * before * (WINDOW_MS / 1000)) {
      back90 = t;
      break;
    }
  }
  return {
    beforePerSecond: before,
    afterPerSecond: perSecond(afterFrom, end),
    firstSuccessAfterS: first === null ? null : (first - crashAt) / 1000,
    back90AfterS: back90 === null ? null : (back90 - crashAt) / 1000,
  };
}

export interface Audit {
  acked: number;
  /** Acknowledged inserts missing from the table. */
  lost: number;
  /** Values present more than once (an insert executed twice). */
  duplicates: number;
  /** Rows present whose insert the client never saw acknowledged (gave up, or stopped). */
  unackedPresent: number;
}

/** Compares the clients' record of acknowledged values with the rows read back, table by table. */
export function audit(acked: Map<string, Set<number>>, present: Map<string, number[]>): Audit {
  let lost = 0;
  let duplicates = 0;
  let unackedPresent = 0;
  let total = 0;
  const tables = new Set([...acked.keys(), ...present.keys()]);
  for (const table of tables) {
    const want = acked.get(table) ?? new Set<number>();
    const rows = present.get(table) ?? [];
    const seen = new Map<number, number>();
    for (const v of rows) seen.set(v, (seen.get(v) ?? 0) + 1);
    total += want.size;
    for (const v of want) if (!seen.has(v)) lost++;
    for (const [v, n] of seen) {
      if (n > 1) duplicates += n - 1;
      if (!want.has(v)) unackedPresent++;
    }
  }
  return { acked: total, lost, duplicates, unackedPresent };
}

/** Successes per bucket, relative to the crash (for the timeline chart). */
export function timeline(
  successes: Success[],
  crashAt: number,
  from: number,
  end: number,
  bucketMs = 250,
): { t: number; perSecond: number }[] {
  const out: { t: number; perSecond: number }[] = [];
  for (let a = from; a + bucketMs <= end; a += bucketMs) {
    const n = successes.filter((s) => s.doneAt >= a && s.doneAt < a + bucketMs).length;
    out.push({ t: (a - crashAt) / 1000, perSecond: (n * 1000) / bucketMs });
  }
  return out;
}
