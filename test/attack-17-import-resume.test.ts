/**
 * Adversarial review 17: an import sent again with the same Idempotency-Key.
 *
 * Promised (docs/api.md "Import"): "the same dump sent again with the same
 * key resumes an import that stopped, skipping the batches already
 * committed"; (operations.md) "the batches already committed are answered from
 * their saved results ... and the import goes on from the failed one". A
 * retry of a request that succeeded (its answer lost) is the first use of an
 * idempotency key.
 *
 * Cause (both tests): a batch that commits nothing (every row in it held back
 * for a parent row, or only statements that changed no row) answers lsn null,
 * and writes.ts `write` returns before saving a result for it; import-run.ts
 * still counts it as sent. Sent again, that batch is not answered from a saved
 * result but runs again, on a cluster that now holds everything after it.
 * Fixed: every batch with items is a commit (import-commit.ts), entries or
 * none, and its saved result travels with it.
 */
import { describe, expect, it } from "vitest";
import { exportDump, importDump, rows } from "./backup-helpers";
import { freshCluster } from "./helpers";
import { ok } from "./review-helpers";

describe("an import sent again with the same Idempotency-Key", () => {
  // Sequence: our own export of a 51-column table that names itself (each row
  // is then one statement of the batch: 1,000 rows a batch). Rows 1-999 have
  // no parent; rows 1000-1999 all name row 2000, the last. Batch 2 (rows
  // 1000-1999) is held back entirely: it commits nothing. The import answers
  // 200. Sent again with the same key, batch 1 is replayed, batch 2 runs again,
  // its parent now present, and inserts rows that are already there: observed
  // 400 "UNIQUE constraint failed: tree.id" (and it says "through LSN 1" while
  // LSN 2 is committed). Expected: the same 200 answer.
  it("answers a retry of a finished import of our own export as the first time", async () => {
    const c = freshCluster("a17-resume-src");
    const cols = Array.from({ length: 49 }, (_, i) => `c${i}`).join(", ");
    await ok(
      c,
      `CREATE TABLE tree(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES tree(id), ${cols})`,
    );
    await ok(c, "INSERT INTO tree (id) VALUES (2000)");
    await ok(
      c,
      `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 1999)
       INSERT INTO tree (id, parent) SELECT i, CASE WHEN i >= 1000 THEN 2000 END FROM k`,
    );
    const dump = await exportDump(c);
    expect(dump.status).toBe(200);
    const target = freshCluster("a17-resume");
    const first = await importDump(target, dump.text, { "idempotency-key": "restore-1" });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const again = await importDump(target, dump.text, { "idempotency-key": "restore-1" });
    expect(again.status, JSON.stringify(again.body).slice(0, 400)).toBe(200);
    expect(again.body.lsn).toBe(first.body.lsn);
    expect(await rows(target, "SELECT count(*) FROM tree")).toEqual([[2000]]);
  });

  // Sequence: CREATE TABLE t, then 1,999 `DELETE FROM t WHERE id = 5` (no row
  // 5 yet: batch 2, 1,000 of them, commits nothing), then INSERT INTO t
  // VALUES(5). First import: 200, t = [5], as sqlite3 loads it. The same dump
  // with the same key again: 200, and t is empty: batch 2 ran again and deleted
  // row 5, while batch 3 (the INSERT) was answered from its saved result.
  // A retry changed the data and answered success.
  it("does not run a batch again that committed nothing", async () => {
    const c = freshCluster("a17-resume-delete");
    const dump = `PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\nCREATE TABLE t(id INTEGER PRIMARY KEY);\n${"DELETE FROM t WHERE id = 5;\n".repeat(1999)}INSERT INTO t VALUES(5);\nCOMMIT;\n`;
    const first = await importDump(c, dump, { "idempotency-key": "k" });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(await rows(c, "SELECT id FROM t")).toEqual([[5]]);
    const again = await importDump(c, dump, { "idempotency-key": "k" });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(await rows(c, "SELECT id FROM t")).toEqual([[5]]);
  });
});
