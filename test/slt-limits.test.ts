import { describe, expect, it } from "vitest";
import conformance from "../docs/conformance.md?raw";
import determinism from "../docs/determinism.md?raw";
import security from "../docs/security.md?raw";
import { call, exec, freshCluster } from "./helpers";
import { DOCUMENTED_LIMITS, documentedLimit } from "./slt/limits";

const DOCS: Record<string, string> = {
  "docs/security.md": security,
  "docs/determinism.md": determinism,
};

/** A section's text: its heading to the next heading of the same or a higher level. */
function section(markdown: string, heading: string): string | undefined {
  const lines = markdown.split("\n");
  const start = lines.findIndex(
    (line) => /^#+ /.test(line) && line.replace(/^#+ /, "") === heading,
  );
  if (start < 0) return undefined;
  const level = (lines[start] ?? "").indexOf(" ");
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((line) => /^#+ /.test(line) && line.indexOf(" ") <= level);
  return (end < 0 ? rest : rest.slice(0, end)).join("\n");
}

describe("limits a conformance run accepts", () => {
  it("each cites a doc section that says what it cites", () => {
    for (const limit of DOCUMENTED_LIMITS) {
      const text = section(DOCS[limit.doc.file] ?? "", limit.doc.section);
      expect(
        text,
        `${limit.id}: no section ${limit.doc.section} in ${limit.doc.file}`,
      ).toBeDefined();
      expect(text, `${limit.id} in ${limit.doc.file} ${limit.doc.section}`).toContain(
        limit.doc.mentions,
      );
    }
  });

  it("are each listed in docs/conformance.md", () => {
    for (const limit of DOCUMENTED_LIMITS) expect(conformance).toContain(`| \`${limit.id}\``);
  });

  it("have unique ids", () => {
    const ids = DOCUMENTED_LIMITS.map((limit) => limit.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("match the cluster's messages, by code as well as by text", () => {
    const cases: [string, string, string, string | undefined][] = [
      [
        "SELECT 1 UNION SELECT 2",
        "INVALID_SQL",
        "too many terms in compound SELECT: SQLITE_ERROR",
        "compound-select-terms",
      ],
      [
        "SELECT 1+1",
        "INVALID_SQL",
        "Expression tree is too large (maximum depth 100): SQLITE_ERROR",
        "expression-depth",
      ],
      ["CREATE TEMP TABLE t(a)", "INVALID_SQL", "not authorized: SQLITE_AUTH", "temp-schema"],
      [
        "create temporary view v as select 1",
        "INVALID_SQL",
        "not authorized: SQLITE_AUTH",
        "temp-schema",
      ],
      [
        "SELECT * FROM pragma_compile_options",
        "INVALID_SQL",
        "not authorized: SQLITE_AUTH",
        "platform-functions",
      ],
      [
        "SELECT sqlite_version()",
        "INVALID_SQL",
        "not authorized to use function: sqlite_version at offset 7: SQLITE_ERROR",
        "platform-functions",
      ],
      [
        "SELECT load_extension('x')",
        "INVALID_SQL",
        "not authorized: SQLITE_ERROR",
        "platform-functions",
      ],
      ["SELECT * FROM t", "INVALID_SQL", "not authorized: SQLITE_AUTH", undefined],
      [
        "PRAGMA x",
        "INVALID_SQL",
        "PRAGMA statements are not allowed: pragmas change settings outside the replicated log",
        "statement-kind",
      ],
      [
        "SELECT 1; SELECT 2",
        "INVALID_SQL",
        "one statement per entry: send several statements as several entries of one request",
        "one-statement-per-sql",
      ],
      [
        "SELECT changes()",
        "NON_DETERMINISTIC",
        "changes() is not allowed: it reads the connection's history",
        "non-deterministic",
      ],
      [
        "SELECT changes()",
        "INVALID_SQL",
        "changes() is not allowed: it reads the connection's history",
        undefined,
      ],
      ["SELECT * FROM nope", "INVALID_SQL", "no such table: nope: SQLITE_ERROR", undefined],
      ["SELECT 1", "UNAVAILABLE", "too many terms in compound SELECT", undefined],
    ];
    for (const [sql, code, message, id] of cases) {
      expect(documentedLimit(sql, { code, message })?.id, `${code} ${message}`).toBe(id);
    }
  });
});

/** A statement the cluster refuses with each limit, and the route it goes to. */
const EXAMPLES: Record<string, { route: "exec" | "query"; sql: string }> = {
  "compound-select-terms": {
    route: "query",
    sql: "SELECT 1 UNION SELECT 2 UNION SELECT 3 UNION SELECT 4 UNION SELECT 5 UNION SELECT 6",
  },
  "expression-depth": { route: "query", sql: `SELECT 1${"+1".repeat(100)}` },
  "result-columns": {
    route: "query",
    sql: `SELECT ${Array.from({ length: 1000 }, (_, i) => i).join(", ")}`,
  },
  "like-pattern": { route: "query", sql: `SELECT 'a' LIKE '${"%a".repeat(50)}'` },
  "result-rows": {
    route: "query",
    sql: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c LIMIT 10001",
  },
  "temp-schema": { route: "exec", sql: "CREATE TEMP TABLE scratch(a)" },
  "platform-functions": { route: "query", sql: "SELECT sqlite_version()" },
  "statement-kind": { route: "exec", sql: "PRAGMA foreign_keys = ON" },
  "one-statement-per-sql": { route: "exec", sql: "SELECT 1; SELECT 2" },
  "reserved-name": { route: "query", sql: "SELECT * FROM _repl_changes" },
  "non-deterministic": { route: "exec", sql: "INSERT INTO f (body) VALUES (random())" },
};

describe("limits a conformance run accepts, against a cluster", () => {
  it("each is how the cluster refuses its example", async () => {
    const cluster = freshCluster("slt-limits");
    const setup = await exec(cluster, [
      { sql: "CREATE TABLE t(a)" },
      { sql: "CREATE VIRTUAL TABLE f USING fts5(body)" },
    ]);
    expect(setup.status, JSON.stringify(setup.body)).toBe(200);
    for (const limit of DOCUMENTED_LIMITS) {
      const example = EXAMPLES[limit.id];
      expect(example, `an example for ${limit.id}`).toBeDefined();
      if (example === undefined) continue;
      const body =
        example.route === "exec" ? { statements: [{ sql: example.sql }] } : { sql: example.sql };
      const res = await call<{ error?: { code: string; message: string } }>(
        "POST",
        `/v1/clusters/${cluster}/${example.route}`,
        { body },
      );
      const refusal = res.body.error;
      expect(refusal, `${limit.id}: ${JSON.stringify(res.body).slice(0, 200)}`).toBeDefined();
      if (refusal === undefined) continue;
      expect(documentedLimit(example.sql, refusal)?.id, `${limit.id}: ${refusal.message}`).toBe(
        limit.id,
      );
    }
  });
});
