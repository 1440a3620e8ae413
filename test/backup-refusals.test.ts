/**
 * What export and import refuse, and what a refusal leaves behind: a cluster
 * that is not empty (409 NOT_EMPTY, nothing written), a malformed dump (400
 * naming the statement and its line; earlier batches stay committed, and the
 * same dump fixed and sent again with the same Idempotency-Key resumes), the
 * guard's refusals, bytes that are not UTF-8, and the tokens and parameters
 * of the routes.
 */
import { describe, expect, it } from "vitest";
import {
  agreedChecksums,
  DUMP_HEAD,
  exportDump,
  importDump,
  imported,
  rows,
} from "./backup-helpers";
import { call, DATA, exec, freshCluster } from "./helpers";

const TAIL = "COMMIT;\n";

/** A dump of table t with `n` rows (rowid i, value 'v<i>'), as the export writes it. */
function dumpOf(n: number, extra = ""): string {
  let body = "CREATE TABLE t (a TEXT);\n";
  for (let i = 1; i <= n; i++) body += `INSERT INTO "t"(rowid,"a") VALUES(${i},'v${i}');\n`;
  return `${DUMP_HEAD}${body}${extra}${TAIL}`;
}

async function lsnOf(cluster: string): Promise<number> {
  const res = await call<{ master: { lsn: number } }>("GET", `/admin/clusters/${cluster}/status`);
  return res.body.master.lsn;
}

function error(res: { body: Record<string, unknown> }): Record<string, unknown> {
  return res.body.error as Record<string, unknown>;
}

describe("an import into a cluster that is not empty", () => {
  it("is refused with 409 NOT_EMPTY and writes nothing, whatever user object it holds", async () => {
    for (const sql of [
      "CREATE TABLE t (a)",
      "CREATE VIEW v AS SELECT 1 AS one",
      "CREATE VIRTUAL TABLE f USING fts5(a)",
    ]) {
      const c = freshCluster("import-full");
      expect((await exec(c, [{ sql }])).status).toBe(200);
      const lsn = await lsnOf(c);
      const before = await agreedChecksums(c);
      for (const dump of [dumpOf(3), "", `${DUMP_HEAD}${TAIL}`]) {
        const res = await importDump(c, dump);
        expect(res.status, sql).toBe(409);
        expect(error(res).code).toBe("NOT_EMPTY");
        expect(error(res).message).toMatch(/import into a new, empty cluster/);
      }
      expect(await lsnOf(c)).toBe(lsn);
      expect(await agreedChecksums(c)).toEqual(before);
    }
  });

  it("is not refused for an empty dump on an empty cluster, which writes nothing", async () => {
    const c = freshCluster("import-nothing");
    expect(await imported(c, `-- nothing\n${DUMP_HEAD}${TAIL}`)).toEqual({
      lsn: null,
      bookmark: null,
      statements: 3,
      skipped: 3,
      rows: 0,
      batches: 0,
    });
    expect(await lsnOf(c)).toBe(0);
  });
});

describe("a malformed dump", () => {
  it("is refused at its first batch with nothing written, naming the statement and its line", async () => {
    const c = freshCluster("import-bad-first");
    const res = await importDump(c, dumpOf(3, "INSERT INTO nowhere VALUES(1);\n"));
    expect(res.status).toBe(400);
    expect(error(res)).toMatchObject({
      code: "INVALID_SQL",
      statement: 7,
      line: 7,
      sql: "INSERT INTO nowhere VALUES(?)",
      committed: { lsn: null, statements: 0, rows: 0 },
    });
    expect(error(res).message).toMatch(
      /^statement 7 of the dump \(line 7\) failed: .*no such table: nowhere.*nothing was committed/,
    );
    expect(await lsnOf(c)).toBe(0);
    // Nothing was written: the same cluster takes a good dump.
    await imported(c, dumpOf(3));
    expect(await rows(c, "SELECT rowid, a FROM t")).toEqual([
      [1, "v1"],
      [2, "v2"],
      [3, "v3"],
    ]);
  });

  it("names the one row of a multi-row INSERT that fails", async () => {
    const c = freshCluster("import-bad-row");
    const dump = dumpOf(40).replace("VALUES(30,'v30')", "VALUES(3,'again')");
    const res = await importDump(c, dump);
    expect(res.status).toBe(400);
    expect(error(res)).toMatchObject({ code: "INVALID_SQL", statement: 33, line: 33 });
    expect(error(res).message).toMatch(/UNIQUE constraint failed/);
    expect(await lsnOf(c)).toBe(0);
  });

  it("keeps the batches before the failing statement, says so, and resumes when sent again fixed", async () => {
    const c = freshCluster("import-resume");
    const rowsBefore = 6000;
    const bad = dumpOf(
      rowsBefore,
      "INSERT INTO t VALUES(oops);\nINSERT INTO t(rowid, a) VALUES(7000, 'last');\n",
    );
    const key = { "idempotency-key": `resume-${c}` };
    const res = await importDump(c, bad, key);
    expect(res.status).toBe(400);
    const committed = error(res).committed as { lsn: number; statements: number; rows: number };
    expect(committed.lsn).toBeGreaterThan(0);
    expect(committed.rows).toBeGreaterThan(0);
    expect(committed.rows).toBeLessThan(rowsBefore);
    expect(error(res).statement).toBe(rowsBefore + 4);
    expect(error(res).message).toMatch(
      /statements 1-\d+ are committed, through LSN \d+; send the dump again/,
    );
    expect(await rows(c, "SELECT count(*) FROM t")).toEqual([[committed.rows]]);
    await agreedChecksums(c);
    // The same dump, fixed, with the same key: the committed batches are answered, the rest loads.
    const fixed = bad.replace("VALUES(oops)", "VALUES('fixed')");
    const again = await importDump(c, fixed, key);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(await rows(c, "SELECT count(*), count(DISTINCT rowid) FROM t")).toEqual([
      [rowsBefore + 2, rowsBefore + 2],
    ]);
    await agreedChecksums(c);
    // Without the key it is a new import, and the cluster is no longer empty.
    expect((await importDump(c, fixed)).status).toBe(409);
  });

  it("is refused for what cannot be loaded, each with the reason", async () => {
    const cases: [string, number, string, RegExp][] = [
      [
        `${DUMP_HEAD}CREATE TABLE t (a);\nINSERT INTO t VALUES('open`,
        400,
        "INVALID_SQL",
        /unrecognized token/,
      ],
      [
        `${DUMP_HEAD}CREATE TABLE t (a);\nROLLBACK; -- due to errors\n`,
        400,
        "BAD_REQUEST",
        /rolls back/,
      ],
      ["PRAGMA writable_schema=ON;\n", 400, "BAD_REQUEST", /CREATE VIRTUAL TABLE/],
      // An export that failed midway: its rows, its failure comment, and no COMMIT.
      [
        `${dumpOf(10).replace(TAIL, "")}-- export failed: the master restarted\n`,
        400,
        "BAD_REQUEST",
        /statement 2 of the dump \(line 2\) failed: the dump begins a transaction it never commits/,
      ],
      [`${DUMP_HEAD}PRAGMA journal_mode=WAL;\n${TAIL}`, 400, "INVALID_SQL", /PRAGMA/],
      [`${DUMP_HEAD}DELETE FROM _repl_changes;\n${TAIL}`, 400, "RESERVED_NAME", /internal/],
      [
        `${DUMP_HEAD}CREATE TABLE t (a);\nINSERT INTO sqlite_sequence VALUES('t','5');\n`,
        400,
        "BAD_REQUEST",
        /integer/,
      ],
      [
        `${DUMP_HEAD}CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT);\nINSERT INTO sqlite_sequence VALUES('u',5);\n${TAIL}`,
        400,
        "INVALID_SQL",
        /names table "u", which the import did not create/,
      ],
      [
        `${DUMP_HEAD}CREATE TABLE t (a);\nINSERT INTO sqlite_sequence VALUES('t',5);\n${TAIL}`,
        400,
        "INVALID_SQL",
        /no table the import created uses AUTOINCREMENT/,
      ],
    ];
    for (const [dump, status, code, message] of cases) {
      const c = freshCluster("import-refused");
      const res = await importDump(c, dump);
      expect(res.status, dump).toBe(status);
      expect(error(res).code, `${dump}: ${JSON.stringify(res.body)}`).toBe(code);
      expect(error(res).message, dump).toMatch(message);
      expect(await lsnOf(c), dump).toBe(0);
    }
    const c = freshCluster("import-not-utf8");
    const bytes = new TextEncoder().encode(
      `${DUMP_HEAD}CREATE TABLE t (a);\nINSERT INTO t VALUES('x');\n`,
    );
    const res = await importDump(c, new Uint8Array([...bytes, 0xff, 0xfe, 0x27, 0x3b]));
    expect(res.status).toBe(400);
    expect(error(res)).toMatchObject({ code: "BAD_REQUEST" });
    expect(error(res).message).toMatch(/not UTF-8/);
  });
});

describe("an import's batches", () => {
  it("go in halves when their record is over log_record_max_bytes, and a row over it is a 413", async () => {
    const c = freshCluster("import-small-records");
    const patched = await call("PATCH", `/admin/clusters/${c}/tunables`, {
      body: { log_record_max_bytes: 65_536 },
    });
    expect(patched.status).toBe(200);
    const answer = await imported(c, dumpOf(6000));
    expect(answer.rows).toBe(6000);
    expect(answer.batches as number).toBeGreaterThan(2);
    expect(await rows(c, "SELECT count(*), min(rowid), max(rowid) FROM t")).toEqual([
      [6000, 1, 6000],
    ]);
    await agreedChecksums(c);
    const big = freshCluster("import-big-row");
    await call("PATCH", `/admin/clusters/${big}/tunables`, {
      body: { log_record_max_bytes: 65_536 },
    });
    const row = `INSERT INTO "t"(rowid,"a") VALUES(1,'${"x".repeat(70_000)}');\n`;
    const res = await importDump(big, `${DUMP_HEAD}CREATE TABLE t (a);\n${row}${TAIL}`);
    expect(res.status).toBe(413);
    expect(error(res)).toMatchObject({ code: "PAYLOAD_TOO_LARGE", statement: 4, line: 4 });
  });
});

describe("the backup routes", () => {
  it("take the admin token only, and refuse bad parameters", async () => {
    const c = freshCluster("backup-routes");
    const dump = await exportDump(c, "", DATA);
    expect(dump.status).toBe(401);
    const res = await importDump(c, dumpOf(1), {}, DATA);
    expect(res.status).toBe(401);
    expect((await exportDump(c, "?progress=yes")).status).toBe(400);
    const key = await importDump(c, dumpOf(1), { "idempotency-key": "has spaces" });
    expect(key.status).toBe(400);
    expect(await lsnOf(c)).toBe(0);
  });

  it("write progress comments and the total row count for a caller who asks", async () => {
    const c = freshCluster("backup-progress");
    expect((await imported(c, dumpOf(4500))).rows).toBe(4500);
    const dump = await exportDump(c, "?progress=1");
    expect(dump.headers.get("x-export-rows")).toBe("4500");
    const lines = dump.text.split("\n").filter((l) => l.startsWith("-- progress: "));
    expect(lines.length).toBeGreaterThan(1);
    expect(lines[lines.length - 1]).toBe("-- progress: 4500 of 4500 rows");
    expect((await exportDump(c)).text).not.toContain("-- progress");
  });
});
