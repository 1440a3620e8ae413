/**
 * The data plane: exec, rows and query (docs/api.md). Each route is served
 * and described in one call (workers/openapi/route.ts); the bodies are
 * validated with the schemas the description is generated from
 * (workers/schemas/data.ts).
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { fromApiValue } from "../../core/api-values";
import { ApiError, type Result } from "../../core/errors";
import {
  type Consistency,
  decodeBookmark,
  type ExecResponse,
  type QueryRequest,
  type Statement,
} from "../../core/protocol";
import { isReservedName, isUserName } from "../../core/reserved-names";
import { sha256Hex } from "../../core/sha256";
import { quoteIdent } from "../../core/sql-lexer";
import type { Exact } from "../../core/sql-value";
import { checkCluster, onMaster } from "../cluster";
import { errorResponse, fromBody } from "../errors";
import { requireToken } from "../middleware/auth";
import { validBody } from "../middleware/json";
import { routeRead } from "../read-route";
import { DATA_AUTH, errorResponses, json, WRITE } from "../openapi/responses";
import { type FrontDoor, serve } from "../openapi/route";
import {
  clusterParams,
  execResponse,
  execSchema,
  IDENT,
  idempotencyKeySchema,
  MAX_PARAMS,
  querySchema,
  queryResponse,
  rowsSchema,
  type SqlParam,
  tableParams,
  writeHeaders,
} from "../schemas/data";

export {
  MAX_PARAMS,
  MAX_ROWS,
  MAX_SQL_CHARS,
  MAX_STATEMENTS,
  execSchema,
  querySchema,
  rowsSchema,
  sqlValue,
  statementSchema,
} from "../schemas/data";

/** A parameter's exact value; a malformed one is a 400 naming where it is. */
function toSql(value: SqlParam, where: string): Exact {
  try {
    return fromApiValue(value);
  } catch (error) {
    if (error instanceof ApiError) throw new ApiError("BAD_REQUEST", `${where}: ${error.message}`);
    throw error;
  }
}

const toSqlAll = (values: readonly SqlParam[], where: string) =>
  values.map((v, i) => toSql(v, `${where}.${i}`));

/**
 * What identifies a request for its Idempotency-Key: the route and the
 * statements as sent (booleans as 1 and 0, as they always were hashed, so a
 * retry across an upgrade still matches its saved result).
 */
function requestText(route: string, statements: readonly { sql: string; params: SqlParam[] }[]) {
  const normal = statements.map((s) => ({
    sql: s.sql,
    params: s.params.map((p) => (typeof p === "boolean" ? (p ? 1 : 0) : p)),
  }));
  return `${route}\n${JSON.stringify(normal)}`;
}

/** The Idempotency-Key header, if sent; a malformed one is a 400 before anything runs. */
export function idempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (!idempotencyKeySchema.safeParse(header).success) {
    throw new ApiError(
      "BAD_REQUEST",
      "Idempotency-Key must be 1-128 printable ASCII characters without spaces",
    );
  }
  return header;
}

export const data = new OpenAPIHono<FrontDoor>();

data.use("*", requireToken("data"));

/** Runs a write on the master, with its Idempotency-Key and the hash a retry must match. */
export async function runExec(
  env: Env,
  cluster: string,
  kind: "exec" | "rows",
  statements: Statement[],
  key: string | undefined,
  hashInput: string,
  format: "objects" | "arrays" = "objects",
): Promise<Result<ExecResponse>> {
  // What tells a retry from a reuse of its key.
  const requestHash = key === undefined ? undefined : sha256Hex(hashInput);
  return (await onMaster(env, cluster, (master) =>
    master.exec({
      cluster,
      kind,
      statements,
      format,
      ...(key === undefined ? {} : { idempotencyKey: key, requestHash }),
    }),
  )) as Result<ExecResponse>;
}

const writeBody = (schema: typeof execSchema | typeof rowsSchema, example: unknown) => ({
  required: true,
  content: { "application/json": { schema, example } },
});

const written = {
  200: json(execResponse, "Committed, and acknowledged by every coherent replica."),
  ...errorResponses(WRITE),
};

serve(
  data,
  "post",
  "/:cluster/exec",
  {
    operationId: "exec",
    tags: ["data"],
    summary: "One write transaction",
    description:
      "Every statement runs in one transaction; any error rolls all of them back. Answered only after every coherent replica acked the commit's LSN.",
    security: DATA_AUTH,
    request: {
      params: clusterParams,
      headers: writeHeaders,
      body: writeBody(execSchema, {
        statements: [
          { sql: "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT)" },
          { sql: "INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)", params: ["hello", "world"] },
        ],
      }),
    },
    responses: written,
  },
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const key = idempotencyKey(c.req.header("idempotency-key"));
    const body = await validBody(c, execSchema);
    const statements = body.statements.map((s, i) => ({
      sql: s.sql,
      params: toSqlAll(s.params, `statements.${i}.params`),
    }));
    const hashText = requestText(
      body.format === "arrays" ? "exec arrays" : "exec",
      body.statements,
    );
    const result = await runExec(c.env, cluster, "exec", statements, key, hashText, body.format);
    if (!result.ok) return errorResponse(c, fromBody(result.error));
    return c.json(result.value);
  },
);

serve(
  data,
  "post",
  "/:cluster/tables/:table/rows",
  {
    operationId: "insertRows",
    tags: ["data"],
    summary: "Insert rows without writing SQL",
    description:
      "One INSERT per row, identifiers validated and quoted, in one transaction. Same answer and idempotency rules as exec; a missing table is 404.",
    security: DATA_AUTH,
    request: {
      params: tableParams,
      headers: writeHeaders,
      body: writeBody(rowsSchema, {
        rows: [
          { k: "a", v: "1" },
          { k: "b", v: "2" },
        ],
      }),
    },
    responses: written,
  },
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const table = c.req.param("table");
    if (!IDENT.test(table)) {
      throw new ApiError(
        "BAD_REQUEST",
        "a table name is letters, digits and _, not starting with a digit",
        {
          table: table.slice(0, 80),
        },
      );
    }
    if (!isUserName(table)) {
      throw new ApiError("RESERVED_NAME", `"${table}" is an internal name and cannot be used`, {
        name: table,
      });
    }
    const key = idempotencyKey(c.req.header("idempotency-key"));
    const body = await validBody(c, rowsSchema);
    const sent: { sql: string; params: SqlParam[] }[] = [];
    const statements: Statement[] = body.rows.map((row, i) => {
      const columns = Object.keys(row);
      if (columns.length === 0)
        throw new ApiError("BAD_REQUEST", `rows.${i}: a row needs at least one column`);
      if (columns.length > MAX_PARAMS) {
        throw new ApiError("BAD_REQUEST", `rows.${i}: at most ${MAX_PARAMS} columns`);
      }
      for (const column of columns) {
        if (!IDENT.test(column)) {
          throw new ApiError("BAD_REQUEST", `rows.${i}: invalid column name`, {
            column: column.slice(0, 80),
          });
        }
        if (isReservedName(column)) {
          throw new ApiError(
            "RESERVED_NAME",
            `"${column}" is an internal name and cannot be used`,
            {
              name: column,
            },
          );
        }
      }
      const sql = `INSERT INTO ${quoteIdent(table)} (${columns.map(quoteIdent).join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`;
      sent.push({ sql, params: columns.map((col) => row[col] ?? null) });
      return { sql, params: columns.map((col) => toSql(row[col] ?? null, `rows.${i}.${col}`)) };
    });
    const result = await runExec(
      c.env,
      cluster,
      "rows",
      statements,
      key,
      requestText(`rows\n${table}`, sent),
    );
    if (!result.ok) return errorResponse(c, fromBody(result.error));
    return c.json(result.value);
  },
);

serve(
  data,
  "post",
  "/:cluster/query",
  {
    operationId: "query",
    tags: ["data"],
    summary: "One read",
    description:
      "Served by the coherent replica nearest the caller when it may, else by the master. Anything SQLite compiles as a write is refused.",
    security: DATA_AUTH,
    request: {
      params: clusterParams,
      body: {
        required: true,
        content: {
          "application/json": {
            schema: querySchema,
            example: { sql: "SELECT k, v FROM kv WHERE k = ?", params: ["hello"] },
          },
        },
      },
    },
    responses: {
      200: json(queryResponse, "The rows, the member that served them and its applied LSN."),
      ...errorResponses(["PAYLOAD_TOO_LARGE", "INVALID_SQL", "RESERVED_NAME"]),
    },
  },
  async (c) => {
    const cluster = checkCluster(c.env, c.req.param("cluster"));
    const body = await validBody(c, querySchema);
    let minLsn = 0;
    if (body.consistency === "bookmark") {
      const lsn = body.bookmark === undefined ? null : decodeBookmark(body.bookmark);
      if (lsn === null) {
        throw new ApiError(
          "BAD_REQUEST",
          'consistency "bookmark" needs the bookmark a write returned',
        );
      }
      minLsn = lsn;
    }
    const request: QueryRequest = {
      cluster,
      sql: body.sql,
      params: toSqlAll(body.params, "params"),
      consistency: body.consistency as Consistency,
      minLsn,
      format: body.format,
    };
    const result = await routeRead(c.env, request, c.req.raw.cf, body.replica);
    if (!result.ok) return errorResponse(c, fromBody(result.error));
    return c.json(result.value);
  },
);
