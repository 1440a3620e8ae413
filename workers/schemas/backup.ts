/**
 * The backup routes' zod schemas (workers/routes/backup.ts): the export's
 * query, the import's headers and answer, as GET /openapi.json describes them.
 */
import { z } from "zod";
import { idempotencyKeySchema } from "./data";

export const exportQuery = z.object({
  progress: z
    .enum(["0", "1", "true", "false"])
    .optional()
    .describe("1: a `-- progress: N of M rows` comment after every page of rows."),
});

export const importHeaders = z.object({
  "idempotency-key": idempotencyKeySchema
    .optional()
    .describe(
      "Makes the import resumable: the same dump sent again with the same key skips the batches already committed.",
    ),
});

export const importResult = z
  .object({
    lsn: z
      .number()
      .int()
      .nullable()
      .describe("The last batch's commit; null if nothing was written."),
    bookmark: z.string().nullable().describe("A bookmark for reads that must see the import."),
    statements: z.number().int().describe("Statements of the dump, skipped ones included."),
    skipped: z
      .number()
      .int()
      .describe("The dump's own PRAGMA foreign_keys, BEGIN TRANSACTION and COMMIT."),
    rows: z.number().int().describe("Rows inserted by the dump's INSERT ... VALUES statements."),
    batches: z.number().int().describe("Commits the import made."),
  })
  .meta({ id: "ImportResult" });
