/**
 * Hrana over HTTP v2, JSON encoding (libSQL's docs/HTTP_V2_SPEC.md and
 * docs/HRANA_2_SPEC.md): what `@libsql/client` sends to `POST …/v2/pipeline`
 * and what it expects back. The request schemas validate a pipeline body; the
 * response schemas say what the endpoint writes (and describe both in
 * GET /openapi.json).
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

export const hranaCond: z.ZodType<HranaCond> = z
  .lazy(() =>
    z.discriminatedUnion("type", [
      z.object({ type: z.literal("ok"), step: z.number().int().min(0) }),
      z.object({ type: z.literal("error"), step: z.number().int().min(0) }),
      z.object({ type: z.literal("not"), cond: hranaCond }),
      z.object({ type: z.literal("and"), conds: z.array(hranaCond) }),
      z.object({ type: z.literal("or"), conds: z.array(hranaCond) }),
      z.object({ type: z.literal("is_autocommit") }),
    ]),
  )
  .meta({ id: "HranaCond", description: "A batch step's condition on earlier steps." });

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

export const hranaCol = z.object({ name: z.string().nullable(), decltype: z.string().nullable() });
export type HranaCol = z.infer<typeof hranaCol>;

export const stmtResult = z.object({
  cols: z.array(hranaCol),
  rows: z.array(z.array(hranaValue)),
  affected_row_count: z.number().int().describe("SQLite's changes() for the statement."),
  last_insert_rowid: z
    .string()
    .nullable()
    .describe("The rowid the statement inserted, as decimal text; null when it inserted none."),
  replication_index: z
    .string()
    .nullish()
    .describe("The commit's LSN, for a statement that wrote (sqld's replication index)."),
});
export type StmtResult = z.infer<typeof stmtResult>;

export const hranaError = z.object({
  message: z.string(),
  code: z
    .string()
    .optional()
    .describe("SQLite's code name (SQLITE_CONSTRAINT, ...) or this API's."),
});
export type HranaError = z.infer<typeof hranaError>;

export const batchResult = z.object({
  step_results: z.array(stmtResult.nullable()),
  step_errors: z.array(hranaError.nullable()),
});
export type BatchResult = z.infer<typeof batchResult>;

export const streamResponse = z.discriminatedUnion("type", [
  z.object({ type: z.literal("close") }),
  z.object({ type: z.literal("execute"), result: stmtResult }),
  z.object({ type: z.literal("batch"), result: batchResult }),
  z.object({ type: z.literal("sequence") }),
  z.object({ type: z.literal("store_sql") }),
  z.object({ type: z.literal("close_sql") }),
  z.object({ type: z.literal("get_autocommit"), is_autocommit: z.boolean() }),
]);
export type StreamResponse = z.infer<typeof streamResponse>;

export const streamResult = z.discriminatedUnion("type", [
  z.object({ type: z.literal("ok"), response: streamResponse }),
  z.object({ type: z.literal("error"), error: hranaError }),
]);
export type StreamResult = z.infer<typeof streamResult>;

export const pipelineResponse = z.object({
  baton: z.string().nullable(),
  base_url: z.string().nullable(),
  results: z.array(streamResult),
});
export type PipelineResponse = z.infer<typeof pipelineResponse>;
