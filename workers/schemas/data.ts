/**
 * The data plane's zod schemas: the handlers validate requests with them
 * (workers/routes/data.ts) and GET /openapi.json is generated from them, so
 * the two cannot disagree. The response schemas describe what the master
 * answers; `Same` below ties each to its type in core/ at compile time.
 */
import { z } from "zod";
import type { ApiValue } from "../../core/api-values";
import type { ExecResponse, QueryResponse } from "../../core/protocol";
import { MAX_USER_PARAMS } from "../../core/sql-params";
import { CLUSTER_NAME } from "../cluster";

export const MAX_STATEMENTS = 1000;
export const MAX_ROWS = 1000;
export const MAX_SQL_CHARS = 100_000;
export const MAX_PARAMS = MAX_USER_PARAMS;

/** A table or column name the rows route accepts (it quotes it too). */
export const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** The one-key objects for what plain JSON cannot carry exactly (docs/api.md, "Values"; core/api-values.ts). */
const encoded = [
  z.strictObject({ int: z.string() }).describe("an INTEGER beyond ±(2^53−1), in decimal"),
  z
    .strictObject({ real: z.union([z.number(), z.string()]) })
    .describe('a REAL JSON would read as an integer, or "Infinity", "-Infinity", "-0.0"'),
  z.strictObject({ base64: z.string() }).describe("a BLOB"),
  z.strictObject({ textBytes: z.string() }).describe("TEXT whose bytes are not valid UTF-8"),
] as const;

export const apiValue = z
  .union([z.string(), z.number(), z.null(), ...encoded])
  .meta({ id: "Value", description: "An SQLite value, exactly (docs/api.md, Values)." });

/** A parameter: a value as results carry it, or a boolean (INTEGER 1 or 0). */
export const sqlValue = z.union([z.string(), z.number(), z.boolean(), z.null(), ...encoded]).meta({
  id: "Parameter",
  description:
    "A value as results carry it, or a boolean (INTEGER 1 or 0). A plain integral number binds as an INTEGER and must be within ±(2^53−1).",
});

export type SqlParam = z.infer<typeof sqlValue>;

export const statementSchema = z
  .object({
    sql: z
      .string()
      .min(1, "must not be empty")
      .max(MAX_SQL_CHARS, `at most ${MAX_SQL_CHARS} characters`)
      .describe("One SQL statement."),
    params: z.array(sqlValue).max(MAX_PARAMS, `at most ${MAX_PARAMS} parameters`).default([]),
  })
  .meta({ id: "Statement" });

const format = z
  .enum(["objects", "arrays"])
  .default("objects")
  .describe(
    '"arrays": rows come as `columns` plus arrays in select order, so duplicate names survive.',
  );

export const execSchema = z
  .strictObject({
    statements: z
      .array(statementSchema)
      .min(1, "at least one statement")
      .max(MAX_STATEMENTS, `at most ${MAX_STATEMENTS} statements`),
    format,
  })
  .meta({ id: "ExecRequest", description: "One write transaction: every statement or none." });

export const rowsSchema = z
  .strictObject({
    rows: z
      .array(z.record(z.string(), sqlValue))
      .min(1, "at least one row")
      .max(MAX_ROWS, `at most ${MAX_ROWS} rows`),
  })
  .meta({
    id: "RowsRequest",
    description: "Rows to insert, one INSERT per row, in one transaction.",
  });

export const querySchema = z
  .strictObject({
    sql: z.string().min(1, "must not be empty").max(MAX_SQL_CHARS),
    params: z.array(sqlValue).max(MAX_PARAMS).default([]),
    consistency: z
      .enum(["strong", "bookmark", "any"])
      .default("strong")
      .describe("strong: linearizable; bookmark: read-your-writes; any: possibly stale."),
    format,
    bookmark: z
      .string()
      .max(64)
      .optional()
      .describe('The bookmark a write returned; needed with "consistency": "bookmark".'),
    replica: z
      .string()
      .regex(
        /^(node-0|replica-[0-9]{1,4}|master)$/,
        "expected a member id such as replica-1, or master",
      )
      .optional()
      .describe("Pin the read to this member, or to the master; it is never sent elsewhere."),
  })
  .meta({ id: "QueryRequest", description: "One read." });

export const clusterParams = z.object({
  cluster: z.string().regex(CLUSTER_NAME).describe("The cluster's name; created on first use."),
});

export const tableParams = clusterParams.extend({
  table: z
    .string()
    .regex(IDENT)
    .meta({ description: "The table to insert into; it must exist.", example: "kv" }),
});

/** 1-128 printable ASCII characters, no spaces: what identifies a retry. */
export const idempotencyKeySchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[\x21-\x7e]+$/);

export const writeHeaders = z.object({
  "idempotency-key": idempotencyKeySchema
    .optional()
    .describe("Makes the write retry-safe: a retry with the same key gets the same answer."),
});

const rowsOut = z.union([z.array(z.record(z.string(), apiValue)), z.array(z.array(apiValue))]);

export const execResponse = z
  .object({
    lsn: z.number().int().describe("The commit's log sequence number."),
    results: z.array(
      z.object({
        rowsWritten: z.number().int(),
        lastRowId: apiValue,
        rows: rowsOut.optional(),
        columns: z.array(z.string()).optional(),
      }),
    ),
    bookmark: z.string().describe('Pass to a read with "consistency": "bookmark".'),
    replayed: z.literal(true).optional().describe("Answered from the saved result of a retry."),
  })
  .meta({ id: "ExecResponse" });

const served = {
  servedBy: z.string().describe("The member that served the read."),
  appliedLsn: z.number().int(),
};

export const queryResponse = z
  .union([
    z.object({ rows: z.array(z.record(z.string(), apiValue)), ...served }),
    z.object({ columns: z.array(z.string()), rows: z.array(z.array(apiValue)), ...served }),
  ])
  .meta({ id: "QueryResponse" });

/** True only when A and B are the same type: a schema that drifts from core/ fails to compile. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const agree = <T extends true>(): T | undefined => undefined;
agree<Same<z.infer<typeof apiValue>, ApiValue>>();
agree<Same<z.infer<typeof execResponse>, ExecResponse>>();
agree<Same<z.infer<typeof queryResponse>, QueryResponse>>();
