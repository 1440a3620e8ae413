/**
 * Adversarial review 17b: which row an import's 400 names when rows held
 * back go in together at the end (master/import-items.ts resolveTogether).
 *
 * Promised (docs/api.md "Import", docs/operations.md "Import"): "a row whose
 * parent is nowhere fails the import with a 400 naming it".
 *
 * Each dump holds two rows that name each other (no order lets them in one
 * by one, so they wait for the end and go in together) and one orphan row
 * whose parent is nowhere: the 400 must name the orphan's line.
 */
import { describe, expect, it } from "vitest";
import { DUMP_HEAD, importDump, rows } from "./backup-helpers";
import { freshCluster } from "./helpers";

async function namedLine(c: string, body: string): Promise<{ line: number; message: string }> {
  const res = await importDump(c, `${DUMP_HEAD}${body}COMMIT;\n`);
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  return res.body.error as { line: number; message: string };
}

describe("the row an import's foreign-key 400 names", () => {
  // Sequence: WITHOUT ROWID table w; rows a->b (line 5) and b->a (line 7) name
  // each other; z->'nowhere' (line 9) is the orphan. foreign_key_check gives
  // no rowid for a WITHOUT ROWID table, so the error falls back to held[0].
  // Known: SQLite names no row there. The error says so and names one of the
  // rows still waiting; telling which one has no parent would mean judging
  // foreign keys (affinity, collation) outside SQLite.
  it("says it cannot name the orphan row of a WITHOUT ROWID table", async () => {
    const c = freshCluster("a17b-name-worowid");
    const error = await namedLine(
      c,
      `CREATE TABLE w(k TEXT PRIMARY KEY, p TEXT REFERENCES w(k)) WITHOUT ROWID;
CREATE TABLE o(x);
INSERT INTO w VALUES('a','b');
INSERT INTO o VALUES(1);
INSERT INTO w VALUES('b','a');
INSERT INTO o VALUES(2);
INSERT INTO w VALUES('z','nowhere');
`,
    );
    expect(error.message).toMatch(/FOREIGN KEY constraint failed/);
    expect(error.message).toMatch(/WITHOUT ROWID: SQLite does not say which row/);
    expect([5, 7, 9]).toContain(error.line);
  });

  // Same with a rowid table whose name is written in another case in the
  // INSERTs than in its CREATE (SQLite folds ASCII case in names).
  it("names the orphan row of a rowid table written in another case", async () => {
    const c = freshCluster("a17b-name-case");
    const error = await namedLine(
      c,
      `CREATE TABLE Tree(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES TREE(id));
CREATE TABLE o(x);
INSERT INTO tree VALUES(1,2);
INSERT INTO o VALUES(1);
INSERT INTO tree VALUES(2,1);
INSERT INTO o VALUES(2);
INSERT INTO tree VALUES(3,99);
`,
    );
    expect(error.message).toMatch(/FOREIGN KEY constraint failed/);
    expect(error.line, error.message).toBe(9);
  });

  // Same, a rowid table with a composite (two-column) foreign key to itself.
  it("names the orphan row of a composite foreign key", async () => {
    const c = freshCluster("a17b-name-composite");
    const error = await namedLine(
      c,
      `CREATE TABLE p(a INTEGER, b INTEGER, pa INTEGER, pb INTEGER, PRIMARY KEY(a, b), FOREIGN KEY(pa, pb) REFERENCES p(a, b));
CREATE TABLE o(x);
INSERT INTO p VALUES(1,1,2,2);
INSERT INTO o VALUES(1);
INSERT INTO p VALUES(2,2,1,1);
INSERT INTO o VALUES(2);
INSERT INTO p VALUES(3,3,7,7);
`,
    );
    expect(error.message).toMatch(/FOREIGN KEY constraint failed/);
    expect(error.line, error.message).toBe(9);
  });

  // Sequence: row 1 (parent 2) waits (line 5); row (1, NULL) at line 7 takes
  // its key; parent 2 comes at line 9. sqlite3 (no -bail) fails line 7
  // ("UNIQUE constraint failed", the later row) and keeps row 1 = (1, 2).
  // The import must fail (it cannot keep sqlite3's row), but names the row
  // sqlite3 loaded, line 5, as the one that failed.
  // Kept: the row that went in late is the one SQLite refuses; the error says
  // it waited and that the row it conflicts with may come later in the dump.
  it("says the row it names went in after later rows of the dump", async () => {
    const c = freshCluster("a17b-name-dup");
    const error = await namedLine(
      c,
      `CREATE TABLE tree(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES tree(id));
CREATE TABLE o(x);
INSERT INTO tree VALUES(1,2);
INSERT INTO o VALUES(1);
INSERT INTO tree VALUES(1,NULL);
INSERT INTO o VALUES(2);
INSERT INTO tree VALUES(2,NULL);
`,
    );
    expect(error.message).toMatch(/UNIQUE constraint failed/);
    expect(error.message).toMatch(
      /waited for its parent row and went in after rows that come later/,
    );
    expect(error.line, error.message).toBe(5);
  });
});

describe("what an import's 400 says is committed", () => {
  // Promise (operations.md "Import"): the 400 names "what is committed
  // (committed.lsn, .statements, .rows)". Sequence: statement 5 (line 5) is a
  // row whose parent is nowhere: it is held. 1,000 more statements (rows of o
  // and tree, alternating so that each is an item) close the first batch,
  // which commits without statement 5. The import fails at its end naming
  // statement 5, yet says statements 1-N (N > 5) are committed.
  it("does not count a statement still held as committed", async () => {
    const c = freshCluster("a17b-committed");
    const filler: string[] = [];
    for (let i = 2; i <= 600; i++) {
      filler.push(`INSERT INTO o VALUES(${i});`, `INSERT INTO tree VALUES(${i},NULL);`);
    }
    const res = await importDump(
      c,
      `${DUMP_HEAD}CREATE TABLE tree(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES tree(id));
CREATE TABLE o(x);
INSERT INTO tree VALUES(1,99999);
${filler.join("\n")}
COMMIT;
`,
    );
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(400);
    const error = res.body.error as {
      line: number;
      statement: number;
      message: string;
      committed: { statements: number; rows: number; lsn: number };
    };
    expect(error.line).toBe(5);
    const [[inTree]] = (await rows(c, "SELECT count(*) FROM tree")) as [[number]];
    const [[inO]] = (await rows(c, "SELECT count(*) FROM o")) as [[number]];
    expect(error.committed.rows).toBe(inTree + inO);
    // Statement 5 is not in the cluster: "statements 1-N are committed" must stop before it.
    expect(error.committed.statements, error.message).toBeLessThan(5);
  });
});
