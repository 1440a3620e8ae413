/**
 * Adversarial review 17c: other ways to a DEFERRABLE INITIALLY DEFERRED key.
 *
 * Promised (docs/determinism.md; schema-info.ts unsupportedTable): such a key
 * is refused where it is created, so no orphan row can reach the platform's
 * commit and reset the master. Each attempt below must be refused (400), or,
 * if it is accepted, an orphan row must still be a 400 with the master up.
 */
import { describe, expect, it } from "vitest";
import { call, exec, freshCluster } from "./helpers";
import { ok } from "./review-helpers";

const ATTEMPTS = [
  "CREATE TABLE c1(id INTEGER PRIMARY KEY, p, FOREIGN KEY(p) REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)",
  "CREATE TABLE c2(id INTEGER PRIMARY KEY, p REFERENCES p(id) deferrable /* x */ initially -- y\n deferred)",
  "CREATE TABLE c3(id INTEGER PRIMARY KEY, p REFERENCES p(id) NOT NULL DEFERRABLE INITIALLY DEFERRED)",
  "CREATE TABLE c4(id INTEGER PRIMARY KEY, p CONSTRAINT k REFERENCES p(id) ON DELETE CASCADE MATCH FULL DEFERRABLE INITIALLY DEFERRED)",
  "CREATE TEMP TABLE c5(id INTEGER PRIMARY KEY, p REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)",
  "CREATE TABLE c6(id INTEGER PRIMARY KEY, p REFERENCES p(id) NOT DEFERRABLE, q REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)",
  "CREATE TABLE c7(id INTEGER PRIMARY KEY, p REFERENCES p(id) NOT DEFERRABLE INITIALLY IMMEDIATE DEFERRABLE INITIALLY DEFERRED)",
];

describe("a deferred foreign key by another spelling", () => {
  // Sequence: CREATE TABLE p; each CREATE above through /exec; if it is accepted,
  // INSERT an orphan row into it.
  it("is refused at its CREATE through /exec", async () => {
    const c = freshCluster("a17c-defer");
    await ok(c, "CREATE TABLE p(id INTEGER PRIMARY KEY)");
    const out: string[] = [];
    for (const sql of ATTEMPTS) {
      const res = await exec(c, [{ sql }]);
      if (res.status === 200) {
        const name = /TABLE (c\d)/.exec(sql)?.[1];
        const orphan = await exec(c, [{ sql: `INSERT INTO ${name}(id, p) VALUES (1, 99)` }]);
        out.push(
          `${name}: created; orphan -> ${orphan.status} ${JSON.stringify(orphan.body).slice(0, 120)}`,
        );
      }
    }
    expect(out).toEqual([]);
  });

  // Sequence: the same CREATE through the libSQL endpoint (one pipeline).
  it("is refused at its CREATE through the libSQL pipeline", async () => {
    const c = freshCluster("a17c-defer-libsql");
    await ok(c, "CREATE TABLE p(id INTEGER PRIMARY KEY)");
    const res = await call("POST", `/libsql/${c}/v2/pipeline`, {
      body: {
        requests: [
          { type: "execute", stmt: { sql: ATTEMPTS[0] } },
          { type: "execute", stmt: { sql: "INSERT INTO c1 VALUES (1, 99)" } },
          { type: "close" },
        ],
      },
    });
    expect(JSON.stringify(res.body)).toMatch(/DEFERRABLE INITIALLY DEFERRED/);
    const st = await call("GET", `/admin/clusters/${c}/status`);
    expect(st.status).toBe(200);
  });
});
