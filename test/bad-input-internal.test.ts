/**
 * No internal table is reachable through client SQL, in any spelling SQLite
 * accepts, and tables that only look internal are left alone. See
 * bad-input-helpers.ts and docs/security.md.
 */
import { describe, expect, it } from "vitest";
import {
  type Case,
  expectError,
  FORMER_INTERNAL_TABLES,
  INTERNAL_TABLES,
  REFUSED_NAME,
  REPLICAS,
  runCases,
  state,
  sweepCluster,
} from "./bad-input-helpers";
import { call, exec, freshCluster, query } from "./helpers";

// ---------------------------------------------------------------------------
// Internal tables

/** Ways to name an internal table that SQLite accepts, with `%` standing for the name. */
const TABLE_FORMS = [
  "%",
  '"%"',
  "[%]",
  "`%`",
  "'%'",
  "main.%",
  "main.'%'",
  "main . /* hidden */ %",
  "UPPER",
];

function named(form: string, table: string): string {
  return form === "UPPER" ? table.toUpperCase() : form.replaceAll("%", table);
}

/** Reads that reach a table other than through a plain FROM. */
const READ_SHAPES = [
  "SELECT * FROM #",
  "SELECT count(*) FROM t WHERE EXISTS (SELECT 1 FROM #)",
  "SELECT (SELECT count(*) FROM #) AS n",
  "WITH x AS (SELECT * FROM #) SELECT * FROM x",
  "SELECT * FROM t JOIN # ON 1",
  "SELECT * FROM t, #",
  "SELECT * FROM (t, #)",
  "SELECT * FROM (#)",
  "SELECT * FROM t LEFT JOIN (#) ON 1",
  "SELECT 1 FROM t UNION SELECT 1 FROM #",
  "SELECT count(*) FROM t WHERE 'x' IN #",
  "EXPLAIN SELECT * FROM #",
];

describe("no internal table is readable through query", () => {
  const cluster = sweepCluster("internal-read");
  const q = (sql: string) => (c: string) => query(c, sql);
  const cases: Case[] = [];
  for (const table of INTERNAL_TABLES) {
    for (const form of TABLE_FORMS) {
      for (const shape of READ_SHAPES) {
        const sql = shape.replace("#", named(form, table));
        // `x IN table` needs a one-column table; SQLite refuses the others itself.
        const code = shape.includes("IN #") ? REFUSED_NAME : "RESERVED_NAME";
        cases.push({ name: sql, send: q(sql), status: 400, code });
      }
    }
  }
  for (const table of [...FORMER_INTERNAL_TABLES, "_cf_KV", "__cf_kv", "_cf_METADATA"]) {
    cases.push({
      name: `SELECT * FROM ${table}`,
      send: q(`SELECT * FROM ${table}`),
      status: 400,
      code: REFUSED_NAME,
    });
  }
  runCases(cases, cluster);

  it("keeps internal state out of SQL: the tables that held it are gone", async () => {
    const res = await query(cluster.name, "SELECT name FROM sqlite_master WHERE type = 'table'", {
      replica: "master",
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const names = res.body.rows.map((r) => String(r.name));
    for (const former of FORMER_INTERNAL_TABLES) expect(names).not.toContain(former);
    expect(names.filter((n) => /^_repl_/i.test(n)).sort()).toEqual([...INTERNAL_TABLES].sort());
  });

  it("shows the internal tables' names and schema in sqlite_master, never their rows", async () => {
    // A decision, documented in docs/security.md: the schema is public (migrations/), the
    // rows are not. Every internal name sqlite_master lists is refused when read.
    for (const replica of REPLICAS.slice(0, 1)) {
      const res = await query(cluster.name, "SELECT name FROM sqlite_master WHERE type = 'table'", {
        replica,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const internal = res.body.rows.map((r) => String(r.name)).filter((n) => /^_repl_/i.test(n));
      expect(internal.length).toBeGreaterThan(0);
      for (const name of internal) {
        expectError(await query(cluster.name, `SELECT * FROM "${name}"`), 400, "RESERVED_NAME");
      }
    }
    expect(await state(cluster.name)).toEqual(cluster.before());
  });
});

describe("no statement through exec touches an internal table", () => {
  const cluster = sweepCluster("internal-write");
  const x = (sql: string, code: Case["code"] = "RESERVED_NAME"): Case => ({
    name: sql,
    send: (c) => exec(c, [{ sql }]),
    status: 400,
    code,
  });
  const cases: Case[] = [];
  for (const form of TABLE_FORMS) {
    const changes = named(form, "_repl_changes");
    const applying = named(form, "_repl_applying");
    cases.push(
      x(`DELETE FROM ${changes}`),
      x(`UPDATE ${changes} SET img = '0'`),
      x(`INSERT INTO ${changes} (tbl, op) VALUES ('t', 'D')`),
      x(`INSERT INTO ${applying} (x) VALUES (1)`),
      x(`INSERT INTO t (v) SELECT img FROM ${changes}`),
      x(`DROP TABLE ${changes}`),
    );
  }
  cases.push(
    x("UPDATE OR IGNORE '_repl_changes' SET img = img"),
    x("UPDATE OR REPLACE '_repl_applying' SET x = x"),
    x(
      "INSERT OR REPLACE INTO '_repl_tunables' (name, value) VALUES ('debug_fault_injection', 'true')",
      REFUSED_NAME,
    ),
    x("INSERT INTO t (v) SELECT 'seen' WHERE ('t', 'I') IN (SELECT tbl, op FROM '_repl_changes')"),
    x("INSERT INTO t (v) SELECT tbl FROM (t, '_repl_changes')"),
    x("ALTER TABLE _repl_changes RENAME TO mine"),
    x("ALTER TABLE _repl_changes ADD COLUMN extra"),
    x('DROP TRIGGER "_repl_cap_i_t"'),
    x("CREATE TRIGGER tr AFTER INSERT ON _repl_changes BEGIN DELETE FROM t; END"),
    x("ALTER TABLE t RENAME TO _repl_mine"),
    x("ALTER TABLE t RENAME TO '_repl_mine'"),
    x("ALTER TABLE t ADD COLUMN _repl_c TEXT"),
    x("CREATE TABLE _repl_mine (a)"),
    x("CREATE TABLE '_repl_mine' (a)"),
    x("CREATE TABLE mine AS SELECT * FROM '_repl_changes'"),
    x("CREATE INDEX i ON _repl_changes (seq)"),
    x("CREATE INDEX '_repl_i' ON t (v)"),
    x("CREATE VIEW v AS SELECT * FROM '_repl_results'"),
    x("CREATE VIEW v AS SELECT * FROM (t, '_repl_results')"),
    x("CREATE TRIGGER tr AFTER INSERT ON _repl_log BEGIN DELETE FROM t; END"),
    x("CREATE TRIGGER tr AFTER INSERT ON t BEGIN DELETE FROM '_repl_log'; END"),
    x("CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE OR IGNORE '_repl_meta' SET value = 1; END"),
    x("CREATE VIRTUAL TABLE f USING fts5(key, value, content='_repl_meta')"),
    x("CREATE VIRTUAL TABLE f USING fts5(key, value, content=_repl_meta)"),
    x("CREATE VIRTUAL TABLE _repl USING fts5(a)"),
    x('CREATE VIRTUAL TABLE "_repl" USING rtree(id, x0, x1)'),
    x("CREATE TABLE mine (a REFERENCES '_repl_log')"),
    x("UPDATE sqlite_master SET sql = '' WHERE name = 't'", REFUSED_NAME),
    x("DELETE FROM _cf_KV", REFUSED_NAME),
    x('SELECT * FROM "_cf_METADATA"', REFUSED_NAME),
  );
  runCases(cases, cluster);
});

// ---------------------------------------------------------------------------
// Names that look internal without being so

describe("tables named like internal ones, but not reserved", () => {
  it("keep their rows on the master and every replica across a master restart", async () => {
    const c = freshCluster("lookalike");
    // `_` is a LIKE wildcard: a pattern '_repl_snap_%' matches every one of these names.
    const names = ["xrepl_snap_1", "Arepl_snap_", "_repl1snap_x", "repl_snap_"];
    const created = await exec(
      c,
      names.flatMap((name) => [
        { sql: `CREATE TABLE ${name} (a INTEGER)` },
        { sql: `INSERT INTO ${name} (a) VALUES (1), (2)` },
      ]),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const tuned = await call("PATCH", `/admin/clusters/${c}/tunables`, {
      body: { debug_fault_injection: true },
    });
    expect(tuned.status).toBe(200);
    const crash = await call("POST", `/admin/clusters/${c}/master/crash`);
    expect(crash.status, JSON.stringify(crash.body)).toBe(202);
    // The next call starts a new master, which clears its own leftovers as it starts.
    let epoch = 1;
    for (let attempt = 0; attempt < 50 && epoch === 1; attempt++) {
      const s = await call<{ master: { epoch: number } }>("GET", `/admin/clusters/${c}/status`);
      if (s.status === 200) epoch = s.body.master.epoch;
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(epoch).toBeGreaterThan(1);
    const v = await call<{
      agree: boolean;
      nodes: { node: string; tables: Record<string, { rows: number }> }[];
    }>("POST", `/admin/clusters/${c}/verify`);
    expect(v.status).toBe(200);
    expect(v.body.agree, JSON.stringify(v.body)).toBe(true);
    for (const node of v.body.nodes) {
      for (const name of names) expect(node.tables[name]?.rows, `${node.node} ${name}`).toBe(2);
    }
  }, 30_000);
});
