/**
 * The guard's differential fuzz test: adversarial statements (test/fuzz/)
 * through the front door, each one the cluster accepts judged again by SQLite
 * on a scratch node from the raw text (test/fuzz/oracle.ts): it must be one
 * statement, open no internal b-tree, and, through /query, not write. Then
 * every node must hold the same exact rows. CI runs a bounded seed; `npm run
 * fuzz -- --seconds N [--seed S]` runs longer.
 */

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createRng } from "../core/message-faults";
import { FUZZ_SCHEMA, FUZZ_TABLES, type FuzzCase, fuzzCase } from "./fuzz/generate";
import { judge, type Verdict } from "./fuzz/oracle";
import { type ApiResult, call, exec, freshCluster } from "./helpers";
import { sameEverywhere } from "./node-images";

const fuzzEnv = env as unknown as { FUZZ_SECONDS?: string; FUZZ_SEED?: string };
const SECONDS = Number(fuzzEnv.FUZZ_SECONDS || 0);
const SEED = Number(fuzzEnv.FUZZ_SEED || 20261201);
/** Cases in CI's bounded run; a longer run goes by time instead. */
const CI_CASES = 400;

async function send(c: string, fuzz: FuzzCase): Promise<ApiResult> {
  if (fuzz.route === "exec") {
    return call("POST", `/v1/clusters/${c}/exec`, {
      body: { statements: [{ sql: fuzz.sql, params: fuzz.params }] },
    });
  }
  return call("POST", `/v1/clusters/${c}/query`, {
    body: { sql: fuzz.sql, params: fuzz.params, replica: fuzz.replica, consistency: "any" },
  });
}

describe("guard fuzz, 4 replicas", () => {
  it(`accepts only statements SQLite compiles as one statement on user objects, and the nodes stay identical (seed ${SEED})`, async () => {
    const c = freshCluster("fuzz");
    for (const sql of FUZZ_SCHEMA) {
      const res = await exec(c, [{ sql }]);
      expect(res.status, `${sql}: ${JSON.stringify(res.body)}`).toBe(200);
    }
    const ns = env.NODE;
    const scratch = ns.get(ns.idFromName(`fuzz-oracle-${c}`));
    await runInDurableObject(scratch, async (_, state) => {
      for (const sql of FUZZ_SCHEMA) state.storage.sql.exec(sql);
    });
    const rng = createRng(SEED, "guard-fuzz");
    const until = Date.now() + SECONDS * 1000;
    const tally = { cases: 0, accepted: 0, refused: 0, byCode: {} as Record<string, number> };
    const problems: string[] = [];
    const reasons = new Map<string, number>();
    for (let i = 0; SECONDS > 0 ? Date.now() < until : i < CI_CASES; i++) {
      const fuzz = fuzzCase(rng);
      const res = await send(c, fuzz);
      tally.cases++;
      const what = `#${i} ${fuzz.route} ${JSON.stringify(fuzz.sql)} ${JSON.stringify(fuzz.params)}`;
      if (res.status >= 500) problems.push(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
      if (res.status !== 200) {
        tally.refused++;
        const code = String((res.body.error as { code?: string } | undefined)?.code);
        tally.byCode[code] = (tally.byCode[code] ?? 0) + 1;
        const message = String((res.body.error as { message?: string } | undefined)?.message)
          .replace(/"[^"]*"/g, '"…"')
          .replace(/offset \d+/, "offset N")
          .slice(0, 70);
        reasons.set(message, (reasons.get(message) ?? 0) + 1);
        continue;
      }
      tally.accepted++;
      const verdict: Verdict = await runInDurableObject(scratch, async (_, state) =>
        judge(state.storage, fuzz.sql, fuzz.params),
      );
      if (verdict.multiple)
        problems.push(`${what}: accepted, but SQLite runs more than one statement`);
      if (verdict.internal.length > 0) {
        problems.push(`${what}: accepted, but opens ${verdict.internal.join(", ")}`);
      }
      if (fuzz.route === "query" && verdict.writes) problems.push(`${what}: a query that writes`);
    }
    console.log(`guard fuzz seed ${SEED}: ${JSON.stringify(tally)}`);
    const top = [...reasons].sort((a, b) => b[1] - a[1]).slice(0, 12);
    for (const [message, n] of top) console.log(`  refused ${n}x: ${message}`);
    expect(problems).toEqual([]);
    // The run really exercised both sides of the guard.
    expect(tally.accepted).toBeGreaterThan(tally.cases / 10);
    expect(tally.byCode.RESERVED_NAME ?? 0).toBeGreaterThan(0);
    for (const name of FUZZ_TABLES) {
      await sameEverywhere(c, `SELECT * FROM ${name} ORDER BY 1`);
    }
  }, 600_000);
});
