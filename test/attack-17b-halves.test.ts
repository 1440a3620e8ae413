/**
 * Adversarial review 17b: a batch over log_record_max_bytes goes in halves
 * (workers/backup/import-run.ts tooLarge/halves), and rows held back in the
 * first half are appended to the second half AFTER its own items.
 *
 * Promised (docs/operations.md "Import"): "Rows, tables, indexes and views
 * may pass rows held; before any other statement (DML, a trigger,
 * sqlite_sequence) ... the rows held go in", and the state is what sqlite3
 * loads from the same dump.
 *
 * Cause: tooLarge() puts the rows held back into this.held and sends each
 * half with send(), which appends the rows held AFTER the half's own items
 * (withHeldRows). A row held in the first half thus runs after the second
 * half's DML / CREATE TRIGGER; the Worker's flush-before-non-row statements
 * (mayPassHeldRows) never sees it, and the master's runItems only settles rows
 * held within the batch before such an item, not rows appended after it.
 * When its parent is in by then, the row goes in silently, after the trigger
 * exists (it fires) or after the INSERT ... SELECT read the table.
 */
import { describe, expect, it } from "vitest";
import { agreedChecksums, DUMP_HEAD, importDump, rows } from "./backup-helpers";
import { call, freshCluster } from "./helpers";

const PAD = "x".repeat(35_000);

async function smallRecords(c: string): Promise<void> {
  const patched = await call("PATCH", `/admin/clusters/${c}/tunables`, {
    body: { log_record_max_bytes: 65_536 },
  });
  expect(patched.status).toBe(200);
}

describe("a batch split in halves with a row held in the first half", () => {
  // Sequence (one batch of 8 items, ~70 KB, over 65,536 -> halves of 4 and 4):
  //   CREATE tree; CREATE o; INSERT o(1, 35 KB); INSERT tree(1, parent 2)   | first half: tree row 1 held
  //   INSERT o(2, 35 KB); INSERT tree(2, NULL); CREATE cnt;
  //   INSERT INTO cnt SELECT count(*) FROM tree                            | second half, row 1 appended after it
  // sqlite3: the INSERT ... SELECT sees both tree rows: cnt = [2].
  it("runs the dump's INSERT ... SELECT only after the rows held before it", async () => {
    const c = freshCluster("a17b-halves-dml");
    await smallRecords(c);
    const dump = `${DUMP_HEAD}CREATE TABLE tree(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES tree(id));
CREATE TABLE o(id INTEGER PRIMARY KEY, pad TEXT);
INSERT INTO o VALUES(1,'${PAD}');
INSERT INTO tree VALUES(1,2);
INSERT INTO o VALUES(2,'${PAD}');
INSERT INTO tree VALUES(2,NULL);
CREATE TABLE cnt(n);
INSERT INTO cnt SELECT count(*) FROM tree;
COMMIT;
`;
    const res = await importDump(c, dump);
    expect(res.status, JSON.stringify(res.body).slice(0, 600)).toBe(200);
    expect(res.body.rows).toBe(4);
    expect(await rows(c, "SELECT id, parent FROM tree ORDER BY id")).toEqual([
      [1, 2],
      [2, null],
    ]);
    // sqlite3 loads cnt = 2. Observed: 1 (the held row went in after the SELECT).
    expect(await rows(c, "SELECT n FROM cnt")).toEqual([[2]]);
    await agreedChecksums(c);
  });

  // Sequence (7 items, halves of 4 and 3): CREATE tree; CREATE o; o(1, 35 KB);
  // tree(1, parent 2) | o(2, 35 KB); tree(2, NULL); CREATE TRIGGER t_in ON tree.
  // sqlite3 creates the trigger after both rows: it never fires, o = [1, 2].
  // Observed: o = [1, 2, 101]: the held row went in after the trigger.
  it("does not fire a trigger created after the held row", async () => {
    const c = freshCluster("a17b-halves-trigger");
    await smallRecords(c);
    const dump = `${DUMP_HEAD}CREATE TABLE tree(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES tree(id));
CREATE TABLE o(id INTEGER PRIMARY KEY, pad TEXT);
INSERT INTO o VALUES(1,'${PAD}');
INSERT INTO tree VALUES(1,2);
INSERT INTO o VALUES(2,'${PAD}');
INSERT INTO tree VALUES(2,NULL);
CREATE TRIGGER t_in AFTER INSERT ON tree BEGIN INSERT INTO o VALUES (100 + new.id, 'fired'); END;
COMMIT;
`;
    const res = await importDump(c, dump);
    expect(res.status, JSON.stringify(res.body).slice(0, 600)).toBe(200);
    expect(await rows(c, "SELECT id FROM o ORDER BY id")).toEqual([[1], [2]]);
    expect(await rows(c, "SELECT count(*) FROM tree")).toEqual([[2]]);
    await agreedChecksums(c);
  });
});
