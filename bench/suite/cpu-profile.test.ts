/** The CPU profile summary (bench:profile): `npm run test:bench`. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type CpuProfile, modulesByLine, summarize } from "./cpu-profile.ts";

const bundle = [
  "// core/a.ts", // line 0
  "function a() {}", // 1
  "// durable-objects/b.ts", // 2
  "function b() {}", // 3
  "function ddl() {}", // 4
].join("\n");

const frame = (functionName: string, lineNumber: number, url = "file:///x/bundle/worker.js") => ({
  functionName,
  url,
  lineNumber,
});

// root -> a -> b ; root -> ddl -> b ; root -> (idle)
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame("(root)", 0, ""), children: [2, 4, 6] },
    { id: 2, callFrame: frame("a", 1), children: [3] },
    { id: 3, callFrame: frame("b", 3) },
    { id: 4, callFrame: frame("ddl", 4), children: [5] },
    { id: 5, callFrame: frame("b", 3) },
    { id: 6, callFrame: frame("(idle)", 0, "") },
  ],
  samples: [2, 3, 3, 5, 6, 6],
  timeDeltas: [100, 100, 100, 100, 300, 300],
};

describe("cpu profile", () => {
  it("names each line's module from the bundle's markers", () => {
    assert.deepEqual(modulesByLine(bundle), [
      "core/a.ts",
      "core/a.ts",
      "durable-objects/b.ts",
      "durable-objects/b.ts",
      "durable-objects/b.ts",
    ]);
  });

  it("sums self and inclusive time, and counts excluded stacks apart", () => {
    const summary = summarize(profile, bundle, { exclude: /^ddl / });
    assert.equal(summary.totalMs, 1);
    assert.equal(summary.idle, 0.6);
    assert.equal(summary.excluded, 0.1);
    const share = (rows: { name: string; share: number }[], name: string) =>
      rows.find((r) => r.name === name)?.share;
    assert.equal(share(summary.self, "b [durable-objects/b.ts]"), 0.2);
    assert.equal(share(summary.self, "a [core/a.ts]"), 0.1);
    assert.equal(share(summary.inclusive, "a [core/a.ts]"), 0.3);
    assert.equal(share(summary.modules, "durable-objects/b.ts"), 0.2);
    assert.equal(share(summary.self, "ddl [durable-objects/b.ts]"), undefined);
  });

  it("counts only the samples within the window", () => {
    // Samples end at 100, 200, 300, 400, 700 and 1000 µs.
    const summary = summarize(profile, bundle, { window: { fromUs: 150, toUs: 450 } });
    assert.equal(summary.totalMs, 0.3);
    assert.equal(summary.idle, 0);
    const b = summary.self.find((r) => r.name === "b [durable-objects/b.ts]");
    assert.equal(b?.share, 1);
  });
});
