/**
 * Adversarial review 17c: rows held back meeting a batch over
 * log_record_max_bytes (workers/backup/import-run.ts tooLarge).
 *
 * Promised (docs/api.md "Import"): "413 when one row is over
 * log_record_max_bytes, or when rows naming each other must go in one commit
 * over it"; otherwise the import loads what sqlite3 loads.
 */
import { describe, expect, it } from "vitest";
import { agreedChecksums, DUMP_HEAD, importDump, rows } from "./backup-helpers";
import { freshCluster, patchTunables } from "./helpers";

describe("rows held back and a last batch over log_record_max_bytes", () => {
  // Sequence (log_record_max_bytes 65,536): CREATE p; CREATE ch; three ch rows
  // of 8 KB naming p 1 (one item, held: p 1 is not in yet); p 1 with 45 KB.
  // The batch (~70 KB) goes in halves, the second half again: [ch rows] (held
  // back) and [p 1] with the dump's end (resolve). p 1 fits alone, and the ch
  // rows fit after it: no rows name each other, no one row is over the limit.
  // sqlite3 loads all four rows. Observed: 413 "3 rows waited for parent rows
  // later in the dump and must go in one commit" (tooLarge: a single item, rows
  // held and resolve: it never tries the item alone, then the rows held).
  it("lets a large parent row in alone, then its children", async () => {
    const c = freshCluster("a17c-held-last");
    expect((await patchTunables(c, { log_record_max_bytes: 65_536 })).status).toBe(200);
    const kids = [1, 2, 3]
      .map((i) => `INSERT INTO ch VALUES(${i},1,'${"k".repeat(8_000)}');\n`)
      .join("");
    const dump = `${DUMP_HEAD}CREATE TABLE p(id INTEGER PRIMARY KEY, pad TEXT);
CREATE TABLE ch(id INTEGER PRIMARY KEY, p INTEGER REFERENCES p(id), pad TEXT);
${kids}INSERT INTO p VALUES(1,'${"p".repeat(45_000)}');
COMMIT;
`;
    const res = await importDump(c, dump);
    expect(res.status, JSON.stringify(res.body).slice(0, 600)).toBe(200);
    expect(await rows(c, "SELECT (SELECT count(*) FROM p), (SELECT count(*) FROM ch)")).toEqual([
      [1, 3],
    ]);
    await agreedChecksums(c);
  });

  // Sequence (log_record_max_bytes 65,536): CREATE t(id, pad); two rows of
  // 35 KB each, one after the other. Each row is well under the limit, but the
  // import groups consecutive rows of one table into one multi-row INSERT
  // (core/import-batcher.ts, up to 99 values) whatever their size, and
  // tooLarge() halves a batch only item by item: one item over the limit is a
  // 413 ("the request changes more than 65536 bytes"). sqlite3 loads both rows.
  it("loads two rows of one table that fit the limit each but not together", async () => {
    const c = freshCluster("a17c-grouped");
    expect((await patchTunables(c, { log_record_max_bytes: 65_536 })).status).toBe(200);
    const dump = `${DUMP_HEAD}CREATE TABLE t(id INTEGER PRIMARY KEY, pad TEXT);
INSERT INTO t VALUES(1,'${"a".repeat(35_000)}');
INSERT INTO t VALUES(2,'${"b".repeat(35_000)}');
COMMIT;
`;
    const res = await importDump(c, dump);
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    expect(await rows(c, "SELECT count(*) FROM t")).toEqual([[2]]);
    await agreedChecksums(c);
  });

  // The same in the shape sqlite3 .dump writes (one table naming itself, rows in
  // key order): rows 1-3 (8 KB) name row 4 (45 KB), the dump's last row; the four
  // rows are one grouped item, refused as the one above.
  it("loads a self-referencing table whose last row is large", async () => {
    const c = freshCluster("a17c-held-tree");
    expect((await patchTunables(c, { log_record_max_bytes: 65_536 })).status).toBe(200);
    const kids = [1, 2, 3]
      .map((i) => `INSERT INTO tree VALUES(${i},4,'${"k".repeat(8_000)}');\n`)
      .join("");
    const dump = `${DUMP_HEAD}CREATE TABLE tree(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES tree(id), pad TEXT);
${kids}INSERT INTO tree VALUES(4,NULL,'${"p".repeat(45_000)}');
COMMIT;
`;
    const res = await importDump(c, dump);
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    expect(await rows(c, "SELECT count(*) FROM tree")).toEqual([[4]]);
    await agreedChecksums(c);
  });
});
