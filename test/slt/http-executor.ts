/**
 * An executor that sends every record through the cluster's front door, as a
 * client would: statements to `exec` one request each, queries to `query`
 * with strong consistency and rows as arrays in select order.
 */
import { call } from "../helpers";
import { decodeJsonValue } from "./decode-json";
import type { QueryOutcome, Refused, SltExecutor, StatementOutcome } from "./run";

interface ErrorBody {
  error?: { code?: unknown; message?: unknown };
}

function refusal(status: number, body: ErrorBody): Refused {
  const { code, message } = body.error ?? {};
  if (typeof code !== "string" || typeof message !== "string") {
    throw new Error(`HTTP ${status} without an error body: ${JSON.stringify(body).slice(0, 200)}`);
  }
  return { ok: false, code, message };
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

/** The executor, and how many queries each node served (the master, or a replica). */
export function httpExecutor(cluster: string): SltExecutor & { servedBy: Map<string, number> } {
  const servedBy = new Map<string, number>();
  return {
    servedBy,

    async statement(sql: string): Promise<StatementOutcome> {
      const { status, body } = await call<ErrorBody>("POST", `/v1/clusters/${cluster}/exec`, {
        body: { statements: [{ sql }] },
      });
      return status === 200 ? { ok: true } : refusal(status, body);
    },

    async query(sql: string): Promise<QueryOutcome> {
      const { status, body } = await call<
        ErrorBody & { columns?: unknown; rows?: unknown; servedBy?: unknown }
      >("POST", `/v1/clusters/${cluster}/query`, {
        body: { sql, consistency: "strong", format: "arrays" },
      });
      if (status !== 200) return refusal(status, body);
      const { columns, rows, servedBy: node } = body;
      if (typeof node === "string") servedBy.set(node, (servedBy.get(node) ?? 0) + 1);
      if (!isStringArray(columns) || !Array.isArray(rows) || !rows.every(Array.isArray)) {
        throw new Error(
          `a 200 without columns and array rows: ${JSON.stringify(body).slice(0, 200)}`,
        );
      }
      return { ok: true, columns, rows: rows.map((row: unknown[]) => row.map(decodeJsonValue)) };
    },
  };
}
