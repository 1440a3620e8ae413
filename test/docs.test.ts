import { describe, expect, it } from "vitest";
import operations from "../docs/operations.md?raw";
import determinism from "../docs/determinism.md?raw";
import { NON_DETERMINISTIC_RULES } from "../core/statement-guard";
import { TUNABLE_NAMES, defaultTunables } from "../core/tunables";

describe("docs stay true to the code", () => {
  it("operations.md lists every tunable with its default", () => {
    const defaults = defaultTunables();
    for (const name of TUNABLE_NAMES) {
      const row = operations.split("\n").find((line) => line.startsWith(`| \`${name}\``));
      expect(row, `${name} missing from docs/operations.md`).toBeDefined();
      const cells = (row ?? "").split("|").map((cell) => cell.trim());
      expect(cells[3], `${name} default`).toBe(String(defaults[name]));
    }
  });

  it("determinism.md lists every rule of the statement guard", () => {
    for (const rule of NON_DETERMINISTIC_RULES) {
      expect(determinism, rule.construct).toContain(rule.construct.replaceAll("|", "\\|"));
    }
  });
});
