/**
 * A batch step's condition, evaluated on the outcomes of the steps before it
 * (HRANA_2_SPEC.md, "Batches"): `ok` and `error` name an earlier step, which
 * counts as neither when it was skipped; `is_autocommit` asks whether no
 * transaction is open.
 */
import { ApiError } from "../errors";
import type { HranaCond } from "./proto";

export type StepState = "ok" | "error" | "skipped";

export function holds(
  cond: HranaCond,
  step: number,
  outcomes: readonly StepState[],
  autocommit: boolean,
): boolean {
  switch (cond.type) {
    case "ok":
    case "error": {
      if (cond.step >= step) {
        throw new ApiError(
          "BAD_REQUEST",
          `batch step ${step}: a condition may only name an earlier step (got ${cond.step})`,
        );
      }
      return outcomes[cond.step] === cond.type;
    }
    case "not":
      return !holds(cond.cond, step, outcomes, autocommit);
    case "and":
      return cond.conds.every((c) => holds(c, step, outcomes, autocommit));
    case "or":
      return cond.conds.some((c) => holds(c, step, outcomes, autocommit));
    case "is_autocommit":
      return autocommit;
  }
}

/** Checks every condition's references before anything runs: a bad batch writes nothing. */
export function checkConditions(conds: readonly (HranaCond | null | undefined)[]): void {
  const visit = (cond: HranaCond, step: number, depth: number): void => {
    if (depth > 32)
      throw new ApiError("BAD_REQUEST", `batch step ${step}: condition nested too deep`);
    if (cond.type === "ok" || cond.type === "error") {
      if (cond.step >= step) {
        throw new ApiError(
          "BAD_REQUEST",
          `batch step ${step}: a condition may only name an earlier step (got ${cond.step})`,
        );
      }
    } else if (cond.type === "not") visit(cond.cond, step, depth + 1);
    else if (cond.type === "and" || cond.type === "or") {
      for (const c of cond.conds) visit(c, step, depth + 1);
    }
  };
  conds.forEach((cond, step) => {
    if (cond) visit(cond, step, 0);
  });
}
