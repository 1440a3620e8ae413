/**
 * JSON bodies: a size limit, a parse with a clear error, and zod validation
 * whose first issue becomes a 400 naming the field. Content-Type is not
 * required, so `curl -d` works as typed.
 */
import type { Context } from "hono";
import type { z } from "zod";
import { ApiError } from "../../core/errors";

export const MAX_BODY_BYTES = 1_048_576;

export async function readJson(c: Context, emptyMeans?: unknown): Promise<unknown> {
  const declared = Number(c.req.header("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  const text = await c.req.text();
  if (new TextEncoder().encode(text).length > MAX_BODY_BYTES) throw tooLarge();
  if (text.trim() === "") {
    if (emptyMeans !== undefined) return emptyMeans;
    throw new ApiError("BAD_REQUEST", "the request body is empty: send JSON");
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError("BAD_REQUEST", "the request body is not valid JSON");
  }
}

function tooLarge(): ApiError {
  return new ApiError("PAYLOAD_TOO_LARGE", `the request body is over ${MAX_BODY_BYTES} bytes`, {
    maxBytes: MAX_BODY_BYTES,
  });
}

/** The body validated by `schema`; an empty body counts as `emptyMeans` when given (e.g. `{}`). */
export async function validBody<S extends z.ZodType>(
  c: Context,
  schema: S,
  emptyMeans?: unknown,
): Promise<z.infer<S>> {
  const body = await readJson(c, emptyMeans);
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue?.path.length ? issue.path.join(".") : "body";
    throw new ApiError("BAD_REQUEST", `${path}: ${issue?.message ?? "invalid"}`, {
      field: path,
    });
  }
  return parsed.data;
}
