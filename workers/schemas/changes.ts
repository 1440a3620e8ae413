/**
 * The change stream's event (core/change-events.ts), for the OpenAPI document.
 */
import { z } from "zod";
import { apiValue } from "./data";

export { clusterParams } from "./data";

const row = z.union([z.record(z.string(), apiValue), z.array(apiValue)]);

export const changeEventSchema = z
  .object({
    lsn: z.number().int(),
    term: z.number().int(),
    ts: z.number().int().describe("The master's clock at commit, ms since the epoch."),
    changes: z.array(
      z.object({
        table: z.string(),
        op: z.enum(["insert", "update", "delete"]),
        key: row,
        oldKey: row.optional(),
        row: row.optional(),
      }),
    ),
    statements: z.array(z.object({ sql: z.string(), params: z.array(apiValue).optional() })),
  })
  .meta({ id: "ChangeEvent", description: "One acknowledged commit." });
