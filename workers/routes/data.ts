/**
 * The data plane: exec, rows and query (shared/API.md).
 */
import { Hono } from "hono";
import { z } from "zod";
import { fromApiValue } from "../../core/api-values";
import { ApiError, type Result } from "../../core/errors";
import {
  type Consistency,
  decodeBookmark,
  type ExecResponse,
  type QueryRequest,
  type QueryResponse,
  type ReplicaQueryOutcome,
  type Statement,
} from "../../core/protocol";
import { isReservedName, isUserName } from "../../core/reserved-names";
import { quoteIdent } from "../../core/sql-lexer";
import { MAX_USER_PARAMS } from "../../core/sql-params";
import type { Exact } from "../../core/sql-value";
import { MASTER_ALIAS } from "../../core/members";
import {
  checkCluster,
  masterRecord,
  memberStub,
  nearestReplica,
  onMaster,
  placedReplicas,
} from "../cluster";
import { errorResponse, fromBody, toApiError } from "../errors";
import { requireToken } from "../middleware/auth";
import { validBody } from "../middleware/json";

export const MAX_STATEMENTS = 1000;
export const MAX_ROWS = 1000;
export const MAX_SQL_CHARS = 100_000;
export const MAX_PARAMS = MAX_USER_PARAMS;

/** A parameter: JSON, or a one-key object for what JSON cannot carry (core/api-values.ts). */
const sqlValue = z.union([
  z.string(),
  z.number(),
  z.boolean(),
  z.null(),
  z.strictObject({ int: z.string() }),
  z.strictObject({ real: z.union([z.number(), z.string()]) }),
  z.strictObject({ base64: z.string() }),
  z.strictObject({ textBytes: z.string() }),
]);

const statementSchema = z.object({
  sql: z
    .string()
    .min(1, "must not be empty")
    .max(MAX_SQL_CHARS, `at most ${MAX_SQL_CHARS} characters`),
  params: z.array(sqlValue).max(MAX_PARAMS, `at most ${MAX_PARAMS} parameters`).default([]),
});

const execSchema = z.strictObject({
  statements: z
    .array(statementSchema)
    .min(1, "at least one statement")
    .max(MAX_STATEMENTS, `at most ${MAX_STATEMENTS} statements`),
  /** "arrays": rows a statement returns come as `columns` plus arrays in select order. */
  format: z.enum(["objects", "arrays"]).default("objects"),
});

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

const rowsSchema = z.strictObject({
  rows: z
    .array(z.record(z.string(), sqlValue))
    .min(1, "at least one row")
    .max(MAX_ROWS, `at most ${MAX_ROWS} rows`),
});

const querySchema = z.strictObject({
  sql: z.string().min(1, "must not be empty").max(MAX_SQL_CHARS),
  params: z.array(sqlValue).max(MAX_PARAMS).default([]),
  consistency: z.enum(["strong", "bookmark", "any"]).default("strong"),
  /** "arrays": `columns` plus rows as arrays in select order (duplicate names survive). */
  format: z.enum(["objects", "arrays"]).default("objects"),
  bookmark: z.string().max(64).optional(),
  /** Pin the read to one replica, or to the master (debugging, tests); it is not sent elsewhere. */
  replica: z
    .string()
    .regex(
      /^(node-0|replica-[0-9]{1,4}|master)$/,
      "expected a member id such as replica-1, or master",
    )
    .optional(),
});

type SqlParam = z.infer<typeof sqlValue>;

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

function idempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (header.length === 0 || header.length > 128 || !/^[\x21-\x7e]+$/.test(header)) {
    throw new ApiError(
      "BAD_REQUEST",
      "Idempotency-Key must be 1-128 printable ASCII characters without spaces",
    );
  }
  return header;
}

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export const data = new Hono<{ Bindings: Env }>();

data.use("*", requireToken("data"));

async function runExec(
  env: Env,
  cluster: string,
  kind: "exec" | "rows",
  statements: Statement[],
  key: string | undefined,
  hashInput: string,
  format: "objects" | "arrays" = "objects",
): Promise<Result<ExecResponse>> {
  const requestHash = key === undefined ? undefined : await sha256Hex(hashInput);
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

data.post("/:cluster/exec", async (c) => {
  const cluster = checkCluster(c.env, c.req.param("cluster"));
  const key = idempotencyKey(c.req.header("idempotency-key"));
  const body = await validBody(c, execSchema);
  const statements = body.statements.map((s, i) => ({
    sql: s.sql,
    params: toSqlAll(s.params, `statements.${i}.params`),
  }));
  const hashText = requestText(body.format === "arrays" ? "exec arrays" : "exec", body.statements);
  const result = await runExec(c.env, cluster, "exec", statements, key, hashText, body.format);
  if (!result.ok) return errorResponse(c, fromBody(result.error));
  return c.json(result.value);
});

data.post("/:cluster/tables/:table/rows", async (c) => {
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
        throw new ApiError("RESERVED_NAME", `"${column}" is an internal name and cannot be used`, {
          name: column,
        });
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
});

data.post("/:cluster/query", async (c) => {
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
  // A read pinned to the member that is master now is the master's to serve.
  const pinnedToMaster =
    body.replica === MASTER_ALIAS ||
    (body.replica !== undefined && body.replica === (await masterRecord(c.env, cluster)).master);
  if (pinnedToMaster) {
    const result = (await onMaster(c.env, cluster, (master) =>
      master.query(request),
    )) as Result<QueryResponse>;
    if (!result.ok) return errorResponse(c, fromBody(result.error));
    return c.json(result.value);
  }
  if (body.replica !== undefined) {
    const pinned = (await placedReplicas(c.env, cluster)).find((r) => r.id === body.replica);
    if (pinned === undefined) {
      throw new ApiError("NOT_FOUND", `no ${body.replica} in cluster ${cluster}`);
    }
    const outcome = (await memberStub(c.env, cluster, pinned.id, pinned.location).replicaQuery(
      request,
      body.replica,
    )) as ReplicaQueryOutcome;
    if (outcome.kind === "rows") return c.json(outcome.response);
    if (outcome.kind === "error") return errorResponse(c, fromBody(outcome.error));
    throw new ApiError("UNAVAILABLE", `${body.replica} cannot serve this read: ${outcome.reason}`, {
      retryAfterSeconds: 1,
      reason: outcome.reason,
    });
  }
  const nearest = await nearestReplica(c.env, cluster, c.req.raw.cf, request.consistency);
  if (nearest !== null) {
    const id = nearest.id;
    try {
      const outcome = (await memberStub(c.env, cluster, id, nearest.location).replicaQuery(
        request,
        id,
      )) as ReplicaQueryOutcome;
      if (outcome.kind === "rows") return c.json(outcome.response);
      if (outcome.kind === "error") return errorResponse(c, fromBody(outcome.error));
    } catch (error) {
      // An unreachable replica is no reason to fail a read: the master serves it.
      console.warn(`read on ${id} failed, falling back to the master`, toApiError(error).message);
    }
  }
  const result = (await onMaster(c.env, cluster, (master) =>
    master.query(request),
  )) as Result<QueryResponse>;
  if (!result.ok) return errorResponse(c, fromBody(result.error));
  return c.json(result.value);
});
