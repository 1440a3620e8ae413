/**
 * The dashboard's arithmetic (workers/dashboard-ui/series.js, sparkline.js):
 * reading the commit-wait histogram out of Prometheus text as prom-client
 * renders it, its p99 over a window as histogram_quantile computes it, rates
 * across a master's restart, and the sparklines' paths. These are browser
 * modules, which the workerd pool bundles as text for the Worker to serve, so
 * they are tested here, in Node, beside the page's own test
 * (dashboard.e2e.test.ts).
 */
import { Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import {
  bucketDelta,
  histogramBuckets,
  parseLabels,
  quantile,
  RateTracker,
  Series,
} from "../../workers/dashboard-ui/series.js";
import { niceMax, shownSpan, sparkPaths } from "../../workers/dashboard-ui/sparkline.js";

/** The master's commit-wait histogram (durable-objects/master/metrics.ts), with `observed` in it. */
async function scrape(observed: { ms: number; path: string; outcome?: string }[]) {
  const registry = new Registry();
  const histogram = new Histogram({
    name: "dosql_commit_wait_ms",
    help: "commit wait",
    labelNames: ["cluster", "outcome", "path"],
    buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000],
    registers: [registry],
  });
  for (const { ms, path, outcome = "acked" } of observed) {
    histogram.observe({ cluster: "main", outcome, path }, ms);
  }
  return registry.metrics();
}

describe("reading the histogram out of Prometheus text", () => {
  it("sums the buckets of every series the filter keeps, +Inf last", async () => {
    const text = await scrape([
      { ms: 3, path: "handoff" },
      { ms: 15, path: "inline" },
      { ms: 15, path: "handoff", outcome: "timeout" },
      { ms: 700, path: "replay" },
    ]);
    const all = histogramBuckets(text, "dosql_commit_wait_ms");
    expect(all.map((b) => b.le)).toEqual([
      1,
      2,
      5,
      10,
      20,
      50,
      100,
      200,
      500,
      1000,
      2000,
      5000,
      10000,
      Number.POSITIVE_INFINITY,
    ]);
    expect(all.at(-1)?.count).toBe(4);
    const commits = histogramBuckets(text, "dosql_commit_wait_ms", (l) => l.path !== "replay");
    expect(commits.find((b) => b.le === 5)?.count).toBe(1);
    expect(commits.find((b) => b.le === 20)?.count).toBe(3);
    expect(commits.at(-1)?.count).toBe(3);
    // Other metrics, and this one's _sum and _count, are not buckets.
    expect(histogramBuckets(`${text}\nother_bucket{le="1"} 9\n`, "other").at(-1)?.count).toBe(9);
    expect(histogramBuckets(text, "dosql_commit_wait")).toEqual([]);
  });

  it("is empty before the first observation, as prom-client renders no series then", async () => {
    expect(histogramBuckets(await scrape([]), "dosql_commit_wait_ms")).toEqual([]);
    expect(quantile(0.99, [])).toBeNull();
  });

  it("unescapes label values", () => {
    expect(parseLabels('a="x\\"y",b="c\\\\d",c="e\\nf",le="+Inf"')).toEqual({
      a: 'x"y',
      b: "c\\d",
      c: "e\nf",
      le: "+Inf",
    });
  });
});

describe("the p99 of what was observed between two scrapes", () => {
  const inf = Number.POSITIVE_INFINITY;

  it("interpolates inside the bucket it falls in, as histogram_quantile does", () => {
    const buckets = [
      { le: 1, count: 0 },
      { le: 2, count: 0 },
      { le: 5, count: 100 },
      { le: inf, count: 100 },
    ];
    expect(quantile(0.99, buckets)).toBeCloseTo(2 + 3 * 0.99, 10);
    expect(quantile(0.5, buckets)).toBeCloseTo(3.5, 10);
    // The lowest bucket starts at 0; a quantile in +Inf is the highest finite bound.
    expect(
      quantile(0.5, [
        { le: 10, count: 2 },
        { le: inf, count: 2 },
      ]),
    ).toBe(5);
    expect(
      quantile(0.99, [
        { le: 10, count: 1 },
        { le: inf, count: 100 },
      ]),
    ).toBe(10);
  });

  it("counts only the change, and all of a restarted counter's counts", () => {
    const before = [
      { le: 5, count: 10 },
      { le: inf, count: 12 },
    ];
    const now = [
      { le: 5, count: 15 },
      { le: inf, count: 20 },
    ];
    expect(bucketDelta(now, before)).toEqual([
      { le: 5, count: 5 },
      { le: inf, count: 8 },
    ]);
    const restarted = [
      { le: 5, count: 1 },
      { le: inf, count: 1 },
    ];
    expect(bucketDelta(restarted, before)).toEqual(restarted);
    expect(bucketDelta(now, [])).toEqual(now);
  });
});

describe("rates from successive polls", () => {
  const scrapeAt = (
    at: number,
    commits: number,
    commitWait: string | null,
    master = "node-0/1",
  ) => ({
    at,
    incarnation: master,
    commits,
    inlineWaits: { off: 0, queueFull: 0, notPlain: commits > 10 ? 2 : 0 },
    commitWait: commitWait === null ? null : histogramBuckets(commitWait, "dosql_commit_wait_ms"),
  });

  it("gives commits/s and inline waits/s per poll, and the p99 over the window", async () => {
    const rates = new RateTracker(5);
    const fast = await scrape([{ ms: 3, path: "handoff" }]);
    const slow = await scrape([
      { ms: 3, path: "handoff" },
      ...Array.from({ length: 10 }, () => ({ ms: 1500, path: "handoff" })),
    ]);
    expect(rates.add(scrapeAt(0, 10, fast))).toEqual({
      commitsPerSecond: null,
      p99CommitWaitMs: null,
      inlineWaitsPerSecond: null,
    });
    const second = rates.add(scrapeAt(500, 20, slow));
    expect(second.commitsPerSecond).toBe(20);
    expect(second.inlineWaitsPerSecond).toEqual({ off: 0, queueFull: 0, notPlain: 4 });
    // Ten commits between 1,000 and 2,000 ms: the p99 is near the bucket's top.
    expect(second.p99CommitWaitMs).toBeGreaterThan(1900);
    expect(second.p99CommitWaitMs).toBeLessThanOrEqual(2000);
    // Nothing new for a poll: the window still holds the slow commits.
    expect(rates.add(scrapeAt(1500, 20, slow)).p99CommitWaitMs).toBeGreaterThan(1900);
    // Without /metrics the p99 is unknown, the commit rate is not.
    const blind = rates.add(scrapeAt(2500, 30, null));
    expect(blind).toMatchObject({ commitsPerSecond: 10, p99CommitWaitMs: null });
  });

  it("starts afresh when the master changes or restarts: its counters did", async () => {
    const rates = new RateTracker(5);
    const text = await scrape([{ ms: 3, path: "handoff" }]);
    rates.add(scrapeAt(0, 500, text));
    const moved = rates.add(scrapeAt(1000, 3, text, "replica-1/1"));
    expect(moved).toEqual({
      commitsPerSecond: null,
      p99CommitWaitMs: null,
      inlineWaitsPerSecond: null,
    });
    expect(rates.add(scrapeAt(2000, 7, text, "replica-1/1")).commitsPerSecond).toBe(4);
  });

  it("keeps a bounded history", () => {
    const series = new Series(3);
    for (let t = 0; t < 5; t++) series.push(t, t * 10);
    expect(series.points.map((p) => p.v)).toEqual([20, 30, 40]);
    series.push(5, null);
    expect(series.last()).toBeNull();
  });
});

describe("sparklines", () => {
  const box = { width: 100, height: 10, span: 10_000, max: 10 };

  it("draws each run between gaps as its own path, 0 on the bottom edge", () => {
    const points = [
      { t: 0, v: 0 },
      { t: 5000, v: 10 },
      { t: 6000, v: null },
      { t: 10_000, v: 5 },
    ];
    expect(sparkPaths(points, box)).toEqual(["M0.0,10.0 L50.0,0.0", "M100.0,5.0"]);
  });

  it("leaves out what is older than the span, and clips values above the ceiling", () => {
    const points = [
      { t: 0, v: 1 },
      { t: 15_000, v: 99 },
      { t: 20_000, v: 0 },
    ];
    expect(sparkPaths(points, box)).toEqual(["M50.0,0.0 L100.0,10.0"]);
  });

  it("rounds the ceiling up to 1, 2 or 5 times a power of ten, never below the floor", () => {
    const at = (...vs: (number | null)[]) => vs.map((v, t) => ({ t, v }));
    expect(niceMax(at(0, 0), 10)).toBe(10);
    expect(niceMax(at(3, 11), 10)).toBe(20);
    expect(niceMax(at(1380), 10)).toBe(2000);
    expect(niceMax(at(4.2, null), 1)).toBe(5);
  });

  it("shows the history there is, between 10 s and the span", () => {
    const at = (...ts: number[]) => ts.map((t) => ({ t, v: 1 }));
    expect(shownSpan(at(0, 2000), 60_000)).toBe(10_000);
    expect(shownSpan(at(0, 25_000), 60_000)).toBe(25_000);
    expect(shownSpan(at(0, 90_000), 60_000)).toBe(60_000);
  });
});
