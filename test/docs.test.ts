/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";
import api from "../docs/api.md?raw";
import architecture from "../docs/architecture.md?raw";
import operations from "../docs/operations.md?raw";
import determinism from "../docs/determinism.md?raw";
import security from "../docs/security.md?raw";
import readme from "../README.md?raw";
import packageJson from "../package.json?raw";
import { MAX_QUERY_ROWS, MAX_RESULT_BYTES } from "../durable-objects/sqlite/read";
import { MAX_BODY_BYTES } from "../workers/middleware/json";
import { MAX_PARAMS, MAX_ROWS, MAX_SQL_CHARS, MAX_STATEMENTS } from "../workers/routes/data";
import { DETERMINISTIC_FUNCTIONS } from "../core/sql-program";
import { TUNABLE_NAMES, defaultTunables } from "../core/tunables";
import { DEFAULT_MAX_STEPS } from "../core/linearizability";
import { REGISTER_KEYS } from "./chaos-registers";
import { COLO_REGIONS, LOCATION_HINTS } from "../core/placement";

describe("docs stay true to the code", () => {
  it("npm start serves at full speed (the local observability collector off), the traced mode one command away", () => {
    const scripts = (JSON.parse(packageJson) as { scripts: Record<string, string> }).scripts;
    expect(scripts.start).toMatch(/^X_LOCAL_OBSERVABILITY=false wrangler dev /);
    expect(scripts["start:traced"]).toMatch(/^X_LOCAL_OBSERVABILITY=true wrangler dev /);
    expect(scripts["start:traced"]?.replace("=true", "=false")).toBe(scripts.start);
    expect(readme).toContain("npm run start:traced");
  });

  it("operations.md names every location hint and the colo table it routes reads by", () => {
    const placement = operations.slice(operations.indexOf("## Placement"));
    for (const hint of LOCATION_HINTS) expect(placement).toContain(`\`${hint}\``);
    expect(placement).toContain("COLO_REGIONS");
    expect(placement).toContain(`about ${Math.round(COLO_REGIONS.size / 100) * 100} colos`);
  });

  it("operations.md lists every tunable with its default", () => {
    const defaults = defaultTunables();
    for (const name of TUNABLE_NAMES) {
      const row = operations.split("\n").find((line) => line.startsWith(`| \`${name}\``));
      expect(row, `${name} missing from docs/operations.md`).toBeDefined();
      const cells = (row ?? "").split("|").map((cell) => cell.trim());
      expect(cells[3], `${name} default`).toBe(String(defaults[name]));
    }
  });

  it("security.md gives every limit the value the code enforces", () => {
    const limits = {
      MAX_BODY_BYTES,
      MAX_STATEMENTS,
      MAX_ROWS,
      MAX_SQL_CHARS,
      MAX_PARAMS,
      MAX_QUERY_ROWS,
      MAX_RESULT_BYTES,
    };
    const rows = security.split("\n").filter((line) => line.startsWith("| "));
    for (const [name, value] of Object.entries(limits)) {
      const row = rows.find((line) => line.includes(`\`${name}\``));
      expect(row, `${name} missing from docs/security.md`).toBeDefined();
      expect(row, name).toContain(value.toLocaleString("en-US"));
    }
  });

  it("determinism.md lists every function a write to a virtual table may call", () => {
    for (const name of DETERMINISTIC_FUNCTIONS) {
      expect(determinism, name).toContain(`\`${name}\``);
    }
  });

  it("operations.md gives the linearizability checker's step cap and the chaos run's register keys", () => {
    expect(operations).toContain(
      `stops after ${DEFAULT_MAX_STEPS.toLocaleString("en-US")} steps per key`,
    );
    const words = ["no", "one", "two", "three", "four", "five"];
    expect(operations).toContain(`go to ${words[REGISTER_KEYS.length]} register keys`);
  });

  it("every source file the docs name exists", () => {
    // import.meta.glob lists the tree at build time; a renamed or removed file leaves its name behind.
    const files = new Set(
      Object.keys(
        import.meta.glob(["../core/**/*.ts", "../durable-objects/**/*.ts", "../workers/**/*.ts"]),
      ).map((path) => path.slice(3)),
    );
    const docs = { architecture, security, operations, api, readme };
    for (const [name, text] of Object.entries(docs)) {
      for (const match of text.matchAll(/`((?:core|durable-objects|workers)\/[\w/.-]+\.ts)`/g)) {
        expect(files.has(match[1] as string), `${name} names ${match[1]}`).toBe(true);
      }
    }
    expect(files.has("durable-objects/node.ts")).toBe(true);
  });
});
