/**
 * SQLite's own sqllogictest files, run through the front door: every statement
 * as an `exec`, every query as a strong read, every result compared with
 * SQLite's. docs/conformance.md says what it covers and which refusals count as
 * documented limits.
 */
import { describe, expect, it } from "vitest";
import { freshCluster } from "./helpers";
import randomGroupby from "./slt/corpus/random_groupby_slt_good_13.test?raw";
import select2 from "./slt/corpus/select2.test?raw";
import select5 from "./slt/corpus/select5.test?raw";
import { httpExecutor } from "./slt/http-executor";
import { runScript } from "./slt/run";
import { summarize } from "./slt/summary";

const CORPUS = [
  { file: "select2.test", script: select2 },
  { file: "select5.test", script: select5 },
  { file: "random_groupby_slt_good_13.test", script: randomGroupby },
];

/**
 * Each file takes 7-10 s alone on a 2-core machine (6-12 ms a statement,
 * 3-5 ms a query, 2.3 s to create the cluster); the bound leaves room for a
 * machine busy with the other test files.
 */
const FILE_TIMEOUT_MS = 120_000;

/** Of the records meant for SQLite, the share that must pass: skips cannot make a run green. */
const MIN_PASSED_SHARE = 0.9;

describe("SQLite's sqllogictest files through the HTTP API", () => {
  for (const { file, script } of CORPUS) {
    it(file, { timeout: FILE_TIMEOUT_MS }, async () => {
      const executor = httpExecutor(freshCluster("slt"));
      const report = await runScript(file, script, executor);
      const summary = summarize(report);
      const servedBy = [...executor.servedBy].sort().map(([node, n]) => `${node} ${n}`);
      console.log(`${summary}\n  queries served by: ${servedBy.join(", ")}`);
      expect(report.failed, summary).toBe(0);
      const forSqlite = report.records - report.skippedForEngine;
      expect(report.passed, summary).toBeGreaterThanOrEqual(MIN_PASSED_SHARE * forSqlite);
      expect(forSqlite, summary).toBeGreaterThan(1000);
    });
  }
});
