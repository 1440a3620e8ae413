/**
 * SURVIVED (attack 18c): workers/middleware/auth.ts with node:crypto and a
 * per-isolate cache of the configured tokens' digests. The cache is keyed by
 * the token's text, so a changed env (a rotated token) takes effect at once
 * and the old token stops working; empty or unset tokens accept nothing; a
 * data token is not an admin token; near misses (prefix, one character off,
 * case) are refused (trailing whitespace is trimmed by the Bearer
 * parse, as before the change).
 */
import { describe, expect, it } from "vitest";
import { checkToken } from "../workers/middleware/auth";

const envOf = (admin: string | undefined, data: string | undefined) =>
  ({ ADMIN_TOKEN: admin, DATA_TOKEN: data }) as unknown as Env;
const ok = (env: Env, token: string, level: "data" | "admin") => {
  try {
    checkToken(env, `Bearer ${token}`, level);
    return true;
  } catch {
    return false;
  }
};

describe("attack 18c: token checks with a cached digest", () => {
  it("a rotated token takes effect and the old one stops working", () => {
    const before = envOf("admin-1", "data-1");
    expect(ok(before, "admin-1", "admin")).toBe(true);
    expect(ok(before, "data-1", "data")).toBe(true);
    const after = envOf("admin-2", "data-2");
    expect(ok(after, "admin-1", "admin")).toBe(false);
    expect(ok(after, "data-1", "data")).toBe(false);
    expect(ok(after, "admin-2", "admin")).toBe(true);
    expect(ok(after, "data-2", "data")).toBe(true);
    // Back and forth: the cache holds both, each bound to its own text.
    expect(ok(before, "admin-2", "admin")).toBe(false);
    expect(ok(before, "admin-1", "admin")).toBe(true);
  });

  it("accepts nothing it should not", () => {
    const env = envOf("s3cret-admin", "s3cret-data");
    for (const t of ["", " ", "s3cret-admi", "s3cret-adminx", "s3cret-admin\t.", "S3cret-admin"]) {
      expect(ok(env, t, "admin"), JSON.stringify(t)).toBe(false);
    }
    expect(ok(env, "s3cret-data", "admin")).toBe(false);
    expect(ok(env, "s3cret-admin", "data")).toBe(true);
    for (const blank of [envOf("", ""), envOf(undefined, undefined)]) {
      expect(ok(blank, "", "admin")).toBe(false);
      expect(ok(blank, "", "data")).toBe(false);
      expect(ok(blank, "undefined", "data")).toBe(false);
    }
    expect(() => checkToken(env, undefined, "data")).toThrow();
    expect(() => checkToken(env, "s3cret-admin", "admin")).toThrow();
  });
});
