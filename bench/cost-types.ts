/** The cost probe's operations (bench/cost-probe.ts), shared with its Node driver. */
export type CostOp =
  | "none"
  | "bare"
  | "guarded"
  | "explain"
  | "captured"
  | "commit"
  | "turns"
  | "commit-turns"
  | "prepare-fast"
  | "prepare-checked"
  | "apply-fast"
  | "apply-checked";

export interface CostRequest {
  op: CostOp;
  n: number;
}
