/**
 * Adversarial review 17c: core/dump-statement.ts parseReplace.
 *
 * Promised (docs/operations.md "Import"): an import loads `sqlite3 .dump`'s
 * output as sqlite3 loads it; replace('...','\n',char(10)) is "the TEXT it
 * stands for". Each row below is compared, as hex(), with what SQLite's own
 * replace() makes of the same expression (SELECT through /query), and verify
 * must agree.
 */
import { describe, expect, it } from "vitest";
import { agreedChecksums, importDump, rows } from "./backup-helpers";
import { freshCluster } from "./helpers";

const EXPRS = [
  "replace('a\\nb','\\n',char(10))",
  "REPLACE('a\\nb','\\n',CHAR(10))",
  "replace( /* c */ 'a\\nb' -- x\n , '\\n' , char ( 10 ) )",
  "replace('aaaa','aa',char(10))",
  "replace('aaa','aa',char(10))",
  "replace('a\\012b\\n','\\012',char(10))",
  "replace(replace('a\\nb\\rc\\n','\\n',char(10)),'\\r',char(13))",
  "replace(replace('xaby','ab',char(98)),'xb',char(122))",
  "replace('a\\nb','\\n',char(0))",
  "replace('a\\nb','\\n',char(0010))",
  "replace('a\\nb','\\n',char(1114111))",
  "replace('a\\nb','\\n',char(1114112))",
  "replace('a\\nb','\\n',char(55296))",
  "replace('a\\nb','\\n',char(57343))",
  "replace('a\\nb','\\n',char(36))",
  "replace('a$b','$',char(36))",
  "replace('a\\nb','',char(10))",
  "replace('é\\n😀','😀',char(128512))",
  "replace('a\\nb','\\n',char(9223372036854775807))",
  "\"replace\"('a\\nb','\\n',\"char\"(10))",
];

describe("replace(...) rows of a dump", () => {
  // Sequence: one table, its parent row first, one row per expression, then
  // compare each row to SELECT typeof(expr), hex(expr).
  it("load exactly what SQLite's replace() gives", async () => {
    const c = freshCluster("a17c-replace");
    const inserts = EXPRS.map((e, i) => `INSERT INTO t VALUES(${i},${e},1000);\n`).join("");
    const dump = `PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE t(id INTEGER PRIMARY KEY, v, p INTEGER REFERENCES t(id));
INSERT INTO t VALUES(1000,'parent',NULL);
${inserts}COMMIT;
`;
    const res = await importDump(c, dump);
    expect(res.status, JSON.stringify(res.body).slice(0, 600)).toBe(200);
    const got = await rows(c, "SELECT id, typeof(v), hex(v) FROM t WHERE id < 1000 ORDER BY id");
    const want: unknown[][] = [];
    for (const [i, e] of EXPRS.entries()) {
      want.push(...(await rows(c, `SELECT ${i}, typeof(${e}), hex(${e})`)));
    }
    expect(got).toEqual(want);
    await agreedChecksums(c);
  });
});
