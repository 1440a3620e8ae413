/**
 * The trigger guard's rewrite of CREATE TRIGGER: the user's WHEN condition
 * becomes one operand of `(guard) AND (condition)`, whatever the condition's
 * text holds, or the statement is refused.
 */
import { describe, expect, it } from "vitest";
import { TRIGGER_GUARD, guardTrigger, unguardTrigger } from "../core/trigger-guard";
import { singleStatement } from "../core/sql-statement";

const guard = (sql: string) => guardTrigger(singleStatement(sql));

describe("guardTrigger", () => {
  it("adds the guard as the WHEN clause of a trigger that has none", () => {
    expect(guard("CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END")).toBe(
      `CREATE TRIGGER tr AFTER INSERT ON t WHEN ${TRIGGER_GUARD} BEGIN SELECT 1; END`,
    );
  });

  it("puts the user's condition in parentheses of its own", () => {
    const sql = "CREATE TRIGGER tr AFTER INSERT ON t WHEN NEW.a > 1 OR NEW.b BEGIN SELECT 1; END";
    expect(guard(sql)).toBe(
      `CREATE TRIGGER tr AFTER INSERT ON t WHEN (${TRIGGER_GUARD}) AND (NEW.a > 1 OR NEW.b) BEGIN SELECT 1; END`,
    );
    expect(unguardTrigger(guard(sql))).toEqual({ sql, guarded: true });
  });

  it.each([["0) OR (1"], ["(0)) OR ((1"], ["0) OR 1 OR (1"], ["NEW.a) OR (NEW.a IS NULL"]])(
    "refuses a WHEN clause that closes a parenthesis it did not open: %s",
    (when) => {
      expect(() =>
        guard(`CREATE TRIGGER tr AFTER INSERT ON t WHEN ${when} BEGIN SELECT 1; END`),
      ).toThrow(/does not balance its parentheses|without ON \.\.\. BEGIN/);
    },
  );

  it("counts only parentheses SQLite reads as such, not those in strings, names or comments", () => {
    const sql =
      "CREATE TRIGGER tr AFTER INSERT ON t WHEN NEW.a = ')' /* ( */ AND \"(\" = ')' -- )\n BEGIN SELECT 1; END";
    const guarded = guard(sql);
    expect(guarded).toContain(
      `WHEN (${TRIGGER_GUARD}) AND (NEW.a = ')' /* ( */ AND "(" = ')') BEGIN`,
    );
  });

  it("refuses a WHEN clause with a parenthesis left open", () => {
    expect(() =>
      guard("CREATE TRIGGER tr AFTER INSERT ON t WHEN (1 BEGIN SELECT 1; END"),
    ).toThrow();
  });
});
