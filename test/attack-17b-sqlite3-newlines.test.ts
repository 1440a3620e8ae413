/**
 * Adversarial review 17b: `sqlite3 .dump` (3.40 here, /usr/bin/sqlite3)
 * writes a TEXT value holding a newline or carriage return as
 * `replace('a\nb','\n',char(10))`, not as a literal.
 *
 * Promised (docs/operations.md "Import"): an import loads `sqlite3 .dump`'s
 * output; a row before the row it names "is rolled back and handed back,
 * and goes again after the next batch's rows, until its parent is in";
 * "Rows, tables, indexes and views ... may pass rows held".
 *
 * core/dump-statement.ts parseInsert takes only literals, so such a row is
 * kind "sql": it is never held (it fails at once on its missing parent) and
 * it is not a row to held-rows.ts mayPassHeldRows either, so rows waiting
 * before it must go in at it (resolve) and fail. Both dumps below are
 * exactly what `sqlite3 t.db .dump` wrote for the tables shown, and sqlite3
 * loads each back (foreign keys off) into the same rows.
 */
import { describe, expect, it } from "vitest";
import { agreedChecksums, importDump, rows } from "./backup-helpers";
import { freshCluster } from "./helpers";

describe("a sqlite3 .dump whose text values hold newlines", () => {
  // Sequence: row 1 (parent 2, note 'a\nb', written with replace()) comes
  // before row 2. sqlite3 loads both. Observed: 400 FOREIGN KEY at line 4.
  it("holds back a child row written with replace(..., char(10))", async () => {
    const c = freshCluster("a17b-nl-child");
    const dump = `PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE tree(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES tree(id), note TEXT);
INSERT INTO tree VALUES(1,2,replace('a\\nb','\\n',char(10)));
INSERT INTO tree VALUES(2,NULL,'x');
COMMIT;
`;
    const res = await importDump(c, dump);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await rows(c, "SELECT id, parent, note FROM tree ORDER BY id")).toEqual([
      [1, 2, "a\nb"],
      [2, null, "x"],
    ]);
    await agreedChecksums(c);
  });

  // Sequence: row 1 (parent 3) waits; row 2 has a newline (replace()); row 3
  // is the parent. The replace() row is not a "row" to the import, so row 1
  // must go in before it, and its parent is not there yet. sqlite3 loads all three.
  it("lets a row with a newline pass a row held", async () => {
    const c = freshCluster("a17b-nl-pass");
    const dump = `PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE tree(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES tree(id), note TEXT);
INSERT INTO tree VALUES(1,3,'x');
INSERT INTO tree VALUES(2,NULL,replace('a\\nb','\\n',char(10)));
INSERT INTO tree VALUES(3,NULL,'y');
COMMIT;
`;
    const res = await importDump(c, dump);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await rows(c, "SELECT count(*) FROM tree")).toEqual([[3]]);
    await agreedChecksums(c);
  });
});
