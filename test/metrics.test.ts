/// <reference types="vite/client" />
/**
 * GET /metrics read back by a Prometheus text parser (parse-prometheus-text-format,
 * through test/prometheus-text.ts, which keeps every series' labels, histograms'
 * included): each metric
 * docs/operations.md lists is there with the type and the label set the doc
 * gives (read from the doc's table, so either side drifting fails), every
 * series the master renders is one the doc lists, and a replica's lag grows
 * across two scrapes while its ack is outstanding.
 */
import { describe, expect, it } from "vitest";
import operations from "../docs/operations.md?raw";
import { call, exec, freshCluster, patchTunables, status, waitUntil } from "./helpers";
import { type Family, parseMetrics, type Scrape } from "./prometheus-text";

interface DocMetric {
  name: string;
  type: string;
  labels: string[];
}

/** The "## Metrics" table: name, type, and the label names (values in parentheses dropped). */
function docMetrics(): DocMetric[] {
  const section = operations.slice(operations.indexOf("## Metrics"));
  const table = section.slice(0, section.indexOf("\n## "));
  return table
    .split("\n")
    .map((line) => line.split("|").map((cell) => cell.trim()))
    .filter((cells) => /^`dosql_\w+`$/.test(cells[1] ?? ""))
    .map((cells) => ({
      name: (cells[1] ?? "").replaceAll("`", ""),
      type: cells[2] ?? "",
      labels: (cells[3] ?? "")
        .replace(/\([^)]*\)/g, "")
        .split(",")
        .map((label) => label.trim())
        .filter((label) => label !== "")
        .sort(),
    }));
}

async function scrape(cluster: string): Promise<Scrape> {
  const { exports } = await import("cloudflare:workers");
  const res = await exports.default.fetch(
    new Request(`http://cluster.test/metrics?cluster=${cluster}`, {
      headers: { authorization: "Bearer dev-admin-token" },
    }),
  );
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseMetrics(await res.text());
}

/** Every series' label names, sorted: histograms' without `le` (one series per label set). */
function labelSets(metric: Family): string[][] {
  return metric.series.map((series) => Object.keys(series.labels).sort());
}

function lagOf(metrics: Scrape, replica: string): number {
  const series = metrics.dosql_replica_lag_ms?.series.find((s) => s.labels.replica === replica);
  expect(series, `lag of ${replica}`).toBeDefined();
  return (series as { value: number }).value;
}

describe("GET /metrics, parsed", () => {
  it("reads the doc's table, every row of it", () => {
    const listed = docMetrics();
    expect(listed.length).toBeGreaterThan(15);
    expect(listed.find((m) => m.name === "dosql_commit_wait_ms")).toEqual({
      name: "dosql_commit_wait_ms",
      type: "histogram",
      labels: ["cluster", "outcome", "path"],
    });
  });

  it("has every documented metric with its type and label set, and nothing undocumented", async () => {
    const c = freshCluster("metrics-doc");
    const ddl = await exec(c, [{ sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" }]);
    expect(ddl.status).toBe(200);
    // A replay, an error the master returns, and a replica marked incoherent, so the
    // labelled counters have series whose labels can be read.
    for (let i = 0; i < 2; i++) {
      expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('a')" }], "k1")).status).toBe(200);
    }
    expect((await exec(c, [{ sql: "INSERT INTO nope VALUES (1)" }])).status).toBe(400);
    expect(
      (
        await patchTunables(c, {
          debug_fault_injection: true,
          rep_timeout_ms: 300,
          coherency_rejoin_penalty_ms: 0,
        })
      ).status,
    ).toBe(200);
    expect((await call("POST", `/admin/clusters/${c}/replicas/replica-2/stop`)).status).toBe(200);
    expect((await exec(c, [{ sql: "INSERT INTO t (v) VALUES ('b')" }])).status).toBe(200);
    await waitUntil("replica-2 marked incoherent", async () =>
      (await status(c)).body.replicas.some((r) => r.id === "replica-2" && r.state !== "coherent"),
    );

    const metrics = await scrape(c);
    const listed = docMetrics();
    for (const doc of listed) {
      const metric = metrics[doc.name];
      expect(metric, `${doc.name} is rendered`).toBeDefined();
      expect(metric?.type, `${doc.name}'s type`).toBe(doc.type);
      for (const labels of labelSets(metric as Family)) {
        expect(labels, `${doc.name}'s labels`).toEqual(doc.labels);
      }
    }
    // Metrics with series here: their label sets were checked above, not skipped.
    const withSeries = listed.filter((doc) => (metrics[doc.name]?.series.length ?? 0) > 0);
    for (const name of [
      "dosql_inline_waits_total",
      "dosql_commit_wait_ms",
      "dosql_ack_latency_ms",
      "dosql_replica_lag_ms",
      "dosql_incoherent_marks_total",
      "dosql_errors_total",
      "dosql_replayed_requests_total",
    ]) {
      expect(withSeries.map((m) => m.name)).toContain(name);
    }
    // One histogram series per replica, not one folded series.
    const acks = (metrics.dosql_ack_latency_ms?.series ?? []).map((s) => s.labels.replica);
    expect(acks).toEqual(expect.arrayContaining(["replica-1", "replica-3", "replica-4"]));
    const marks = metrics.dosql_incoherent_marks_total?.series ?? [];
    expect(marks.map((s) => s.labels)).toContainEqual({
      cluster: c,
      replica: "replica-2",
      reason: expect.any(String),
    });
    expect(Object.keys(metrics).sort()).toEqual(listed.map((m) => m.name).sort());
  });

  it("shows a replica's lag growing across two scrapes while its ack is outstanding", async () => {
    const c = freshCluster("metrics-lag");
    expect((await exec(c, [{ sql: "CREATE TABLE t (v TEXT)" }])).status).toBe(200);
    expect((await patchTunables(c, { debug_fault_injection: true })).status).toBe(200);
    // replica-3 holds every message 1.5 s before applying it: the write's ack is outstanding.
    const slow = await call("POST", `/admin/clusters/${c}/replicas/replica-3/delay`, {
      body: { ms: 1500 },
    });
    expect(slow.status).toBe(200);
    const write = exec(c, [{ sql: "INSERT INTO t VALUES ('x')" }]);
    await waitUntil(
      "the write reached every other replica",
      async () => lagOf(await scrape(c), "replica-3") > 0,
    );
    const first = await scrape(c);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const second = await scrape(c);
    expect(lagOf(second, "replica-3")).toBeGreaterThanOrEqual(lagOf(first, "replica-3") + 150);
    expect(lagOf(second, "replica-1")).toBe(0);
    expect((await write).status).toBe(200);
    // The ack arrived: nothing is outstanding, so the lag is 0 again.
    expect(lagOf(await scrape(c), "replica-3")).toBe(0);
  });
});
