/** The benchmark's pure pieces: `npm run test:bench` (Node's test runner, no cluster). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { lineChart, renderSvg } from "./charts.ts";
import type { StatusDelta } from "./cluster.ts";
import { BEGIN, END, renderGenerated, spliceGenerated } from "./doc.ts";
import { report as capReport } from "./experiments/cap.ts";
import { plan as catchupPlan, report as catchupReport } from "./experiments/catchup.ts";
import { type CrashRun, plan as crashPlan, report as crashReport } from "./experiments/crash.ts";
import {
  A_TARGET,
  B_TARGET,
  report as lateAcksReport,
  TARGET_DELAY_MS,
  WIDE_CLIENTS,
} from "./experiments/late-acks.ts";
import { latencyKey, report as latencyReport } from "./experiments/latency.ts";
import { key as offOnKey, report as offOnReport } from "./experiments/off-on.ts";
import { report as writersReport } from "./experiments/writers.ts";
import { pointOrder, type Sample } from "./measure.ts";
import { audit, recovery, timeline } from "./recovery.ts";
import type { ExperimentReport } from "./report.ts";
import { seedOffOnMedian } from "./seed.ts";
import { bundledConfig } from "./server.ts";
import { benchState } from "./state-dir.ts";
import { median, ratio, sustainedShare } from "./stats.ts";
import { int, percent, renderTable, times } from "./table.ts";

const delta: StatusDelta = {
  ackHeldMs: 0,
  ackRttMs: 20,
  inlineWaits: { off: 0, queueFull: 0, notPlain: 0 },
  passes: 0,
  checkedPerPass: 0,
  answeredPerPass: 0,
  skippedEarlyStop: 0,
  peakOutstanding: 0,
};

function sample(insertsPerSecond: number): Sample {
  return {
    ...delta,
    driver: "in-runtime",
    clients: 64,
    seconds: 3,
    inserts: insertsPerSecond * 3,
    insertsPerSecond,
    p50Ms: 100,
    p99Ms: 200,
    errors: 0,
    firstError: null,
    notCoherentAtStart: [],
    notCoherentAtEnd: [],
  };
}

describe("medians and ratios", () => {
  it("takes the middle value, or the mean of the middle two", () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
  });

  it("is NaN for no runs, and ignores runs that measured nothing", () => {
    assert.ok(Number.isNaN(median([])));
    assert.equal(median([Number.NaN, 5]), 5);
  });

  it("gives no ratio against zero", () => {
    assert.ok(Number.isNaN(ratio(5, 0)));
    assert.equal(ratio(6, 3), 2);
  });

  it("compares the last seconds of a sustained run with its first, without the partial last second", () => {
    // 11 whole seconds and a partial twelfth that must not count.
    const series = [800, 800, 700, 600, 500, 400, 300, 300, 200, 200, 200, 17];
    const { first, last, share } = sustainedShare(series, 3);
    assert.equal(first, 2300 / 3);
    assert.equal(last, 200);
    assert.equal(share, 200 / (2300 / 3));
    assert.deepEqual(sustainedShare([5, 5, 0], 1), { first: 5, last: 5, share: 1 });
    assert.throws(() => sustainedShare([1, 2, 3, 4, 5, 6], 3), /need at least 7 seconds/);
  });

  it("quotes the seed's median run", () => {
    assert.deepEqual(seedOffOnMedian(64), { off: 14_089, on: 21_500 });
    assert.equal(seedOffOnMedian(7), null);
  });
});

describe("tables", () => {
  it("pads every column to its widest cell, as the formatter does", () => {
    assert.equal(
      renderTable(["a", "bb"], [["1", "2222"]]),
      ["| a   | bb   |", "| --- | ---- |", "| 1   | 2222 |"].join("\n"),
    );
  });

  it("escapes pipes inside cells", () => {
    assert.match(renderTable(["x"], [["a|b"]]), /a\\\|b/);
  });

  it("formats counts, ratios and shares, with a dash for what was not measured", () => {
    assert.equal(int(12_345.4), "12,345");
    assert.equal(times(5.954), "5.95x");
    assert.equal(percent(0.956), "96%");
    assert.equal(int(Number.NaN), "–");
  });
});

describe("the generated doc section", () => {
  const generated = renderGenerated(
    {
      command: "npm run bench",
      date: "2026-11-30 00:00 UTC",
      machine: "m",
      mode: "quick",
      durationSeconds: 10,
    },
    [],
    "benchmarks",
  );

  it("replaces only what lies between its markers", () => {
    const doc = `# Benchmarks\n\nhand-written\n\n${BEGIN}\nold\n${END}\n\nmore hand-written\n`;
    const out = spliceGenerated(doc, generated);
    assert.match(out, /hand-written[\s\S]*Results \(generated\)[\s\S]*more hand-written/);
    assert.doesNotMatch(out, /\nold\n/);
  });

  it("is appended to a page that has no markers yet", () => {
    assert.ok(spliceGenerated("# Benchmarks\n", generated).endsWith(`${END}\n`));
  });
});

describe("experiment 1's report", () => {
  const samples = new Map<string, Sample[]>();
  for (const clients of [16, 64, 256]) {
    samples.set(offOnKey("in-runtime", 0, clients, true), [sample(800)]);
    for (const replicas of [4, 7]) {
      samples.set(offOnKey("in-runtime", replicas, clients, true), [
        sample(450),
        sample(500),
        sample(900),
      ]);
      samples.set(offOnKey("in-runtime", replicas, clients, false), [sample(100)]);
    }
  }
  const report = offOnReport(samples, ["in-runtime"], false, "1 run");

  it("checks the no-delay target against the same run's 0-replica baseline", () => {
    const target = report.targets[0];
    assert.equal(target?.pass, true);
    assert.match(
      target?.measured ?? "",
      /on 500, off 100 \(5\.00x\), 0 replicas 800 \(63%\); effective ack delay/,
    );
  });

  it("fails the target when on is under 60% of the baseline", () => {
    samples.set(offOnKey("in-runtime", 0, 64, true), [sample(2000)]);
    const again = offOnReport(samples, ["in-runtime"], false, "1 run");
    assert.equal(again.targets[0]?.pass, false);
  });
});

function withP50(p50Ms: number, ackHeldMs: number): Sample {
  return { ...sample(100), p50Ms, ackHeldMs };
}

describe("the seed's headline targets", () => {
  const lateKey = (delay: number, on: boolean) => `in-runtime|late|d${delay}|${on ? "on" : "off"}`;
  const wideKey = (delay: number) => `in-runtime|wide|d${delay}`;
  const build = (on: number, off: number, wideDelay: number, wideNone: number) => {
    const samples = new Map<string, Sample[]>();
    for (const delay of [1, 5, 20, TARGET_DELAY_MS]) {
      samples.set(lateKey(delay, true), [{ ...sample(on), ackHeldMs: 104 }]);
      samples.set(lateKey(delay, false), [{ ...sample(off), ackHeldMs: 103 }]);
    }
    samples.set(wideKey(TARGET_DELAY_MS), [{ ...sample(wideDelay), ackHeldMs: 110 }]);
    samples.set(wideKey(0), [sample(wideNone)]);
    return lateAcksReport(samples, ["in-runtime"], true, "r").targets;
  };

  it("passes A at 95% of the 8x bound and B at 90%, each with its effective delay", () => {
    const [a, b] = build(A_TARGET * 60, 60, B_TARGET * 1000, 1000);
    assert.equal(a?.pass, true);
    assert.match(a?.measured ?? "", /7\.60x; effective ack delay on 104 ms \/ off 103 ms/);
    assert.equal(b?.pass, true);
    assert.match(b?.target ?? "", new RegExp(`${WIDE_CLIENTS} clients: on >= 90%`));
    assert.match(b?.measured ?? "", /effective ack delay 110 ms/);
  });

  it("fails A just under 7.6x and B just under 90%", () => {
    const [a, b] = build(455, 60, 899, 1000);
    assert.equal(a?.pass, false);
    assert.equal(b?.pass, false);
  });
});

describe("the latency targets", () => {
  it("allow D + 5 ms at 1 and 8 clients and D + 15% at 64, against the p50", () => {
    const samples = new Map<string, Sample[]>();
    samples.set(latencyKey(1, 20), [withP50(25, 20.5)]);
    samples.set(latencyKey(8, 20), [withP50(25.1, 21)]);
    samples.set(latencyKey(64, 100), [withP50(115, 101)]);
    samples.set(latencyKey(64, 20), [withP50(23.1, 20)]);
    const targets = latencyReport(samples, "r").targets;
    const find = (clients: number, delay: number) =>
      targets.find((t) =>
        t.target.startsWith(`ack delay ${delay} ms, ${clients} client${clients === 1 ? "" : "s"},`),
      );
    assert.equal(find(1, 20)?.pass, true);
    assert.equal(find(8, 20)?.pass, false);
    assert.equal(find(64, 100)?.pass, true);
    assert.equal(find(64, 20)?.pass, false);
    assert.match(find(1, 20)?.measured ?? "", /D \+ 5\.0 ms\); effective ack delay 21 ms/);
    // A point that did not run fails.
    assert.equal(find(1, 5)?.pass, false);
  });
});

describe("every experiment's tables", () => {
  const crashRun: CrashRun = {
    driver: "http",
    clients: 64,
    on: true,
    crashAfterLoadS: null,
    beforePerSecond: 100,
    afterPerSecond: 90,
    firstSuccessAfterS: 0.5,
    back90AfterS: 1,
    acked: 10,
    lost: 0,
    duplicates: 0,
    unackedPresent: 0,
    retriedRequests: 1,
    resends: 1,
    replayed: 1,
    failed: 0,
    firstFailure: null,
    agree: true,
    notCoherent: [],
    epochBefore: 1,
    epochAfter: 2,
    timeline: [],
  };
  const none = new Map<string, Sample[]>();
  const reports: ExperimentReport[] = [
    offOnReport(none, ["in-runtime", "http"], true, "r"),
    writersReport(none, ["in-runtime", "http"], true, "r"),
    lateAcksReport(none, ["in-runtime", "http"], true, "r"),
    latencyReport(none, "r"),
    capReport(none, ["in-runtime", "http"], true, "r"),
    crashReport([crashRun], crashPlan(false), ["http"]),
    catchupReport([], catchupPlan(false), 4_000_000),
  ];

  it("have a cell for every header in every row, measured or not", () => {
    for (const report of reports) {
      for (const table of report.tables) {
        for (const row of table.rows) {
          assert.equal(
            row.length,
            table.headers.length,
            `${report.id}: ${table.headers.join(", ")}`,
          );
        }
      }
    }
  });

  it("fail a target that was not measured", () => {
    const unmeasured = reports
      .flatMap((r) => r.targets)
      .filter((t) => t.target.includes("ack delay"));
    assert.ok(unmeasured.length > 0);
    assert.ok(unmeasured.every((t) => !t.pass));
  });
});

describe("crash analysis", () => {
  it("finds acknowledged inserts that are missing or present twice", () => {
    const acked = new Map([["t", new Set([0, 1, 2])]]);
    const present = new Map([["t", [0, 2, 2, 3]]]);
    assert.deepEqual(audit(acked, present), {
      acked: 3,
      lost: 1,
      duplicates: 1,
      unackedPresent: 1,
    });
  });

  it("measures the rate before, the first success after, and the return to 90%", () => {
    // 10 inserts/s for 10 s, nothing for 2 s after the crash at 10 s, then 10/s again.
    const successes = [];
    for (let t = 0; t < 20_000; t += 100) {
      if (t < 10_000 || t >= 12_000) successes.push({ sentAt: t - 50, doneAt: t });
    }
    const r = recovery(successes, 0, 10_000, 20_000);
    assert.equal(r.beforePerSecond, 10);
    assert.equal(r.afterPerSecond, 10);
    assert.equal(r.firstSuccessAfterS, 2);
    // The window from 1.9 s already holds 9 of the 10 inserts a full second has.
    assert.equal(r.back90AfterS, 1.9);
    assert.equal(timeline(successes, 10_000, 0, 1000, 500)[0]?.perSecond, 10);
  });

  it("reports no recovery when nothing succeeds after the crash", () => {
    const r = recovery([{ sentAt: 0, doneAt: 100 }], 0, 1000, 5000);
    assert.equal(r.firstSuccessAfterS, null);
    assert.equal(r.back90AfterS, null);
  });
});

describe("the bench server configuration", () => {
  it("points wrangler at the prebuilt bundle and skips bundling", () => {
    const out = bundledConfig(
      'name = "x"\nmain = "bench/worker.ts"\n[vars]\nA = "1"\n',
      "bundle/worker.js",
    );
    assert.match(out, /^main = "bundle\/worker\.js"\nno_bundle = true\n\[vars\]/m);
  });
});

describe("charts", () => {
  it("render to SVG without a browser", async () => {
    const svg = await renderSvg(
      lineChart({
        file: "t.svg",
        title: "t",
        xTitle: "clients",
        yTitle: "inserts / s",
        points: [
          { x: 16, y: 1, series: "on" },
          { x: 64, y: 2, series: "on" },
        ],
      }),
    );
    assert.match(svg, /^<svg/);
  });
});

describe("run order and state", () => {
  it("runs the points as given, then reversed, alternating by repeat", () => {
    assert.deepEqual(pointOrder(["on", "off", "base"], 1), ["on", "off", "base"]);
    assert.deepEqual(pointOrder(["on", "off", "base"], 2), ["base", "off", "on"]);
    assert.deepEqual(pointOrder(["on", "off", "base"], 3), ["on", "off", "base"]);
  });

  it("keeps the state where BENCH_STATE says, and refuses anything else", () => {
    assert.equal(benchState({ BENCH_STATE: "disk" }), "disk");
    assert.throws(() => benchState({ BENCH_STATE: "ssd" }), /memory or disk/);
    // Unset: in memory where a tmpfs is at hand (this machine's /dev/shm), else on disk.
    assert.ok(["memory", "disk"].includes(benchState({})));
  });
});
