/// <reference types="vite/client" />
/**
 * docs/operations.md against the code it describes, so either drifting
 * fails: every tunable's type and bounds (test/docs.test.ts checks the
 * defaults) and a word on when to change it, every incoherent reason the
 * master can give, every field a status document carries, and every fault
 * route the API description lists.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import operations from "../docs/operations.md?raw";
import { defaultTunables, describeTunables, TUNABLE_NAMES } from "../core/tunables";
import { exec, freshCluster, status } from "./helpers";

/** The text of a "## " (or "### ") section, up to the next heading of the same level. */
function section(heading: string): string {
  const start = operations.indexOf(`\n${heading}\n`);
  expect(start, `${heading} in docs/operations.md`).toBeGreaterThanOrEqual(0);
  const level = heading.split(" ")[0] ?? "";
  const rest = operations.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`\n${level} `));
  return end < 0 ? rest : rest.slice(0, end);
}

const rowCells = (text: string, first: string) =>
  text
    .split("\n")
    .find((line) => line.startsWith(`| \`${first}\``))
    ?.split("|")
    .map((cell) => cell.trim());

describe("docs/operations.md", () => {
  it("gives every tunable the type and bounds core/tunable-specs.ts gives it", () => {
    const tunables = section("## Tunables");
    for (const [name, t] of Object.entries(describeTunables(defaultTunables()))) {
      const cells = rowCells(tunables, name);
      expect(cells, name).toBeDefined();
      const type = t.type === "enum" ? (t.values ?? []).join(" / ") : t.type;
      expect(cells?.slice(2, 6), name).toEqual([
        type,
        String(t.default),
        String(t.min ?? "–"),
        String(t.max ?? "–"),
      ]);
    }
  });

  it("says when to change every tunable", () => {
    const advice = section("### When to change them");
    for (const name of TUNABLE_NAMES) expect(advice, name).toContain(`\`${name}\``);
  });

  it("lists every reason the master marks a replica incoherent for", () => {
    const sources = import.meta.glob("../durable-objects/master/*.ts", {
      query: "?raw",
      import: "default",
      eager: true,
    }) as Record<string, string>;
    const reasons = new Set<string>();
    for (const text of Object.values(sources)) {
      for (const m of text.matchAll(/markIncoherent\([^,()]+,\s*"([a-z-]+)"\)/g)) {
        reasons.add(m[1] ?? "");
      }
      for (const m of text.matchAll(/saveReplicaState\([^;]*"incoherent",\s*"([a-z-]+)"\)/g)) {
        reasons.add(m[1] ?? "");
      }
    }
    // The ones the code uses today, so a pattern that stops matching fails here too.
    for (const known of ["ack-timeout", "unreachable", "slow", "new", "removed", "diverged"]) {
      expect(reasons).toContain(known);
    }
    const states = section("## Replica states");
    for (const reason of reasons) expect(rowCells(states, reason), reason).toBeDefined();
  });

  it("describes every field of the status document", async () => {
    const c = freshCluster("ops-doc");
    expect((await exec(c, [{ sql: "CREATE TABLE t (v)" }])).status).toBe(200);
    const body = (await status(c)).body as unknown as Record<string, unknown>;
    const fields = new Set<string>();
    const walk = (value: unknown, path: string) => {
      if (Array.isArray(value)) {
        for (const item of value) walk(item, `${path}[]`);
      } else if (value !== null && typeof value === "object") {
        for (const [key, inner] of Object.entries(value)) walk(inner, `${path}.${key}`);
      } else {
        fields.add(path.slice(1));
      }
    };
    walk(body, "");
    expect(fields.size).toBeGreaterThan(60);
    // Every name the Status table gives in backticks, as dotted parts and brace lists.
    const table = section("## Status");
    const named = new Set(
      [...table.matchAll(/`([^`]+)`/g)].flatMap((m) => (m[1] ?? "").split(/[.{},[\]\s]+/)),
    );
    for (const field of fields) {
      const leaf = field.split(".").pop()?.replace("[]", "") ?? field;
      expect(named, `status field ${field}`).toContain(leaf);
    }
  });

  it("describes every fault route of the API description", async () => {
    const response = await exports.default.fetch(new Request("http://cluster.test/openapi.json"));
    const doc = (await response.json()) as {
      paths: Record<string, Record<string, { tags?: string[] }>>;
    };
    const faults = Object.entries(doc.paths).filter(([, methods]) =>
      Object.values(methods).some((op) => op.tags?.includes("faults")),
    );
    expect(faults.length).toBeGreaterThan(10);
    const text = section("## Fault routes");
    for (const [path] of faults) {
      const last = path.split("/").slice(-1)[0] ?? "";
      // In full, or as the doc's short form ("`.../stop` and `/start`").
      const named = text.includes(`${path}\``) || text.includes(`/${last}\``);
      expect(named, path).toBe(true);
    }
  });
});
