// @ts-check
/**
 * The numbers the dashboard plots, derived from what it polls: commits/s from
 * the status document's commit counter, the p99 commit wait from the
 * Prometheus histogram `dosql_commit_wait_ms` (the change of its bucket counts
 * over a short window, as `histogram_quantile(0.99, rate(...))` computes it),
 * and a bounded history per series. Pure functions and plain classes, so the
 * Node tests check them without a browser.
 */

/** @typedef {{ le: number, count: number }} Bucket A cumulative count: observations <= le. */
/** @typedef {{ t: number, v: number | null }} Point A value at a time (ms); null is a gap. */

/** One sample line of the text format: name, optional `{labels}`, value. */
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/**
 * The labels of one sample, unescaped.
 * @param {string} text what stands between the braces
 * @returns {Record<string, string>}
 */
export function parseLabels(text) {
  /** @type {Record<string, string>} */
  const labels = {};
  for (const match of text.matchAll(LABEL)) {
    const [, name = "", raw = ""] = match;
    labels[name] = raw.replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
  }
  return labels;
}

/**
 * A Prometheus value: a float, or +Inf, -Inf, NaN.
 * @param {string} text
 */
function parseValue(text) {
  if (text === "+Inf") return Number.POSITIVE_INFINITY;
  if (text === "-Inf") return Number.NEGATIVE_INFINITY;
  return Number(text);
}

/**
 * The cumulative buckets of one histogram, summed over every series whose
 * labels `keep` accepts, sorted by upper bound (+Inf last). Empty when the
 * histogram has no series yet (prom-client renders one only after its first
 * observation).
 * @param {string} text Prometheus text exposition format
 * @param {string} name the histogram's name, without `_bucket`
 * @param {(labels: Record<string, string>) => boolean} [keep]
 * @returns {Bucket[]}
 */
export function histogramBuckets(text, name, keep = () => true) {
  const wanted = `${name}_bucket`;
  /** @type {Map<number, number>} */
  const sums = new Map();
  for (const line of text.split("\n")) {
    if (!line.startsWith(wanted)) continue;
    const match = SAMPLE.exec(line);
    if (match === null || match[1] !== wanted) continue;
    const labels = parseLabels(match[2] ?? "");
    if (labels.le === undefined || !keep(labels)) continue;
    const le = parseValue(labels.le);
    const count = parseValue(match[3] ?? "");
    if (Number.isNaN(le) || !Number.isFinite(count)) continue;
    sums.set(le, (sums.get(le) ?? 0) + count);
  }
  return [...sums.entries()].sort(([a], [b]) => a - b).map(([le, count]) => ({ le, count }));
}

/**
 * What was observed between two scrapes of a histogram. A count that went
 * down means the counters restarted (a new master, or the master's restart):
 * everything counted since then is new, so the later scrape is the change.
 * @param {Bucket[]} now
 * @param {Bucket[]} before
 * @returns {Bucket[]}
 */
export function bucketDelta(now, before) {
  const earlier = new Map(before.map((b) => [b.le, b.count]));
  const delta = now.map((b) => ({ le: b.le, count: b.count - (earlier.get(b.le) ?? 0) }));
  return delta.some((b) => b.count < 0) ? now : delta;
}

/**
 * The q-quantile of cumulative buckets, interpolated linearly inside the
 * bucket it falls in, as Prometheus's histogram_quantile does: the lowest
 * bucket starts at 0, and a quantile in the +Inf bucket is the highest finite
 * bound. Null when nothing was observed.
 * @param {number} q between 0 and 1
 * @param {Bucket[]} buckets
 * @returns {number | null}
 */
export function quantile(q, buckets) {
  const total = buckets.at(-1)?.count ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  let lowerLe = 0;
  let lowerCount = 0;
  for (const bucket of buckets) {
    if (bucket.count >= rank) {
      if (bucket.le === Number.POSITIVE_INFINITY) return lowerLe;
      const inBucket = bucket.count - lowerCount;
      if (inBucket <= 0) return bucket.le;
      return lowerLe + (bucket.le - lowerLe) * ((rank - lowerCount) / inBucket);
    }
    lowerLe = bucket.le;
    lowerCount = bucket.count;
  }
  return lowerLe;
}

/** A bounded history of one value, oldest first. */
export class Series {
  /** @param {number} capacity how many points it keeps */
  constructor(capacity) {
    this.capacity = capacity;
    /** @type {Point[]} */
    this.points = [];
  }

  /**
   * @param {number} t
   * @param {number | null} v
   */
  push(t, v) {
    this.points.push({ t, v });
    if (this.points.length > this.capacity) this.points.shift();
  }

  /** The latest value, null when there is none or it is a gap. */
  last() {
    return this.points.at(-1)?.v ?? null;
  }
}

/**
 * @typedef {object} Scrape What one poll brought, reduced to what rates need.
 * @property {number} at when it was taken (ms)
 * @property {string} incarnation the master and its epoch: counters restart with either
 * @property {number} commits the status document's `master.commits`
 * @property {Record<string, number>} inlineWaits `master.waiter.inlineWaits`
 * @property {Bucket[] | null} commitWait the commit-wait histogram, null if /metrics failed
 */

/**
 * @typedef {object} Rates What the sparklines plot for one poll; null where
 * there is nothing to compare with yet (the first poll, a new master).
 * @property {number | null} commitsPerSecond
 * @property {number | null} p99CommitWaitMs over the last `window` polls
 * @property {Record<string, number> | null} inlineWaitsPerSecond by reason
 */

/** Turns successive scrapes into rates; one per cluster shown. */
export class RateTracker {
  /** @param {number} window how many earlier scrapes the p99 looks back over */
  constructor(window) {
    this.window = window;
    /** @type {Scrape[]} */
    this.history = [];
  }

  /**
   * @param {Scrape} scrape
   * @returns {Rates}
   */
  add(scrape) {
    const previous = this.history.at(-1);
    if (previous !== undefined && previous.incarnation !== scrape.incarnation) this.history = [];
    const last = this.history.at(-1);
    // The oldest scrape in the window that has the histogram to compare with.
    const base = this.history.find((s) => s.commitWait !== null);
    this.history.push(scrape);
    if (this.history.length > this.window) this.history.shift();
    if (last === undefined || scrape.at <= last.at) {
      return { commitsPerSecond: null, p99CommitWaitMs: null, inlineWaitsPerSecond: null };
    }
    const seconds = (scrape.at - last.at) / 1000;
    /** @param {number} now @param {number} before */
    const rate = (now, before) => (now >= before ? (now - before) / seconds : null);
    /** @type {Record<string, number>} */
    const inline = {};
    for (const [reason, count] of Object.entries(scrape.inlineWaits)) {
      inline[reason] = rate(count, last.inlineWaits[reason] ?? 0) ?? 0;
    }
    const p99 =
      scrape.commitWait !== null && base?.commitWait != null
        ? quantile(0.99, bucketDelta(scrape.commitWait, base.commitWait))
        : null;
    return {
      commitsPerSecond: rate(scrape.commits, last.commits),
      p99CommitWaitMs: p99,
      inlineWaitsPerSecond: inline,
    };
  }
}
