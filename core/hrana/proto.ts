/**
 * Hrana over HTTP v2, JSON encoding (libSQL's docs/HTTP_V2_SPEC.md and
 * docs/HRANA_2_SPEC.md): what `@libsql/client` sends to `POST …/v2/pipeline`
 * and what it expects back. The request schemas validate a pipeline body; the
 * response types are what the endpoint writes.
 */
import { z } from "zod";

export const hranaValue = z.discriminatedUnion("type", [
  z.object({ type: z.literal("null") }),
  z.object({ type: z.literal("integer"), value: z.string() }),
  z.object({ type: z.literal("float"), value: z.number() }),
  z.object({ type: z.literal("text"), value: z.string() }),
  z.object({ type: z.literal("blob"), base64: z.string() }),
]);
export type HranaValue = z.infer<typeof hranaValue>;

export const hranaStmt = z.object({
  sql: z.string().optional(),
  sql_id: z.number().int().optional(),
  args: z.array(hranaValue).optional(),
  named_args: z.array(z.object({ name: z.string(), value: hranaValue })).optional(),
  want_rows: z.boolean().optional(),
});
export type HranaStmt = z.infer<typeof hranaStmt>;

export type HranaCond =
  | { type: "ok"; step: number }
  | { type: "error"; step: number }
  | { type: "not"; cond: HranaCond }
  | { type: "and"; conds: HranaCond[] }
  | { type: "or"; conds: HranaCond[] }
  | { type: "is_autocommit" };

export const hranaCond: z.ZodType<HranaCond> = z.lazy(() =>
  z.discriminatedUnion("type", [
    z.object({ type: z.literal("ok"), step: z.number().int().min(0) }),
    z.object({ type: z.literal("error"), step: z.number().int().min(0) }),
    z.object({ type: z.literal("not"), cond: hranaCond }),
    z.object({ type: z.literal("and"), conds: z.array(hranaCond) }),
    z.object({ type: z.literal("or"), conds: z.array(hranaCond) }),
    z.object({ type: z.literal("is_autocommit") }),
  ]),
);

export const hranaBatch = z.object({
  steps: z
    .array(z.object({ condition: hranaCond.nullish(), stmt: hranaStmt }))
    .max(1000, "at most 1,000 steps per batch"),
});
export type HranaBatch = z.infer<typeof hranaBatch>;

export const streamRequest = z.discriminatedUnion("type", [
  z.object({ type: z.literal("close") }),
  z.object({ type: z.literal("execute"), stmt: hranaStmt }),
  z.object({ type: z.literal("batch"), batch: hranaBatch }),
  z.object({
    type: z.literal("sequence"),
    sql: z.string().nullish(),
    sql_id: z.number().int().nullish(),
  }),
  z.object({
    type: z.literal("describe"),
    sql: z.string().nullish(),
    sql_id: z.number().int().nullish(),
  }),
  z.object({ type: z.literal("store_sql"), sql_id: z.number().int(), sql: z.string() }),
  z.object({ type: z.literal("close_sql"), sql_id: z.number().int() }),
  z.object({ type: z.literal("get_autocommit") }),
]);
export type StreamRequest = z.infer<typeof streamRequest>;

export const pipelineBody = z.object({
  baton: z.string().nullish(),
  requests: z.array(streamRequest).max(1000, "at most 1,000 requests per pipeline"),
});
export type PipelineBody = z.infer<typeof pipelineBody>;

export interface HranaCol {
  name: string | null;
  decltype: string | null;
}

export interface StmtResult {
  cols: HranaCol[];
  rows: HranaValue[][];
  affected_row_count: number;
  last_insert_rowid: string | null;
  /** The commit's LSN, for a statement that wrote (sqld's replication index). */
  replication_index?: string | null;
}

export interface HranaError {
  message: string;
  code?: string;
}

export interface BatchResult {
  step_results: (StmtResult | null)[];
  step_errors: (HranaError | null)[];
}

export type StreamResponse =
  | { type: "close" }
  | { type: "execute"; result: StmtResult }
  | { type: "batch"; result: BatchResult }
  | { type: "sequence" }
  | { type: "store_sql" }
  | { type: "close_sql" }
  | { type: "get_autocommit"; is_autocommit: boolean };

export type StreamResult =
  | { type: "ok"; response: StreamResponse }
  | { type: "error"; error: HranaError };

export interface PipelineResponse {
  baton: string | null;
  base_url: string | null;
  results: StreamResult[];
}
