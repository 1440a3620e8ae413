import { describe, expect, it } from "vitest";
import type { NodeChecksums } from "../core/protocol";
import { compareChecksums } from "../core/verify";

const node = (name: string, lsn: number, t = "aa", schema = "s1"): NodeChecksums => ({
  node: name,
  appliedLsn: lsn,
  schema,
  tables: { t: { rows: 2, checksum: t } },
});

describe("compareChecksums", () => {
  it("agrees when every replica is at the master's LSN with the same checksums", () => {
    const report = compareChecksums(node("master", 5), [
      node("replica-1", 5),
      node("replica-2", 5),
    ]);
    expect(report).toMatchObject({ agree: true, lsn: 5, mismatches: [] });
    expect(report.nodes).toHaveLength(3);
  });

  it("names each way a replica can differ", () => {
    const missingTable: NodeChecksums = { ...node("replica-4", 5), tables: {} };
    const report = compareChecksums(node("master", 5), [
      node("replica-1", 4),
      node("replica-2", 5, "bb"),
      node("replica-3", 5, "aa", "s2"),
      missingTable,
      { node: "replica-5", error: "stopped" },
    ]);
    expect(report.agree).toBe(false);
    expect(report.mismatches).toEqual([
      "replica-1: at LSN 4, master at 5",
      "replica-2: table t differs",
      "replica-3: schema differs",
      "replica-4: table t differs",
      "replica-5: unreachable (stopped)",
    ]);
  });
});
