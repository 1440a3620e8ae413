/**
 * Adversarial review 17b: resuming an import with the same Idempotency-Key
 * after it failed while rows were held back (workers/backup/import-run.ts).
 *
 * Promised (docs/operations.md "Import"): "fix the dump and send it again
 * with the same Idempotency-Key: the batches already committed are answered
 * from their saved results ... and the import goes on from the failed one";
 * the state is then what sqlite3 loads from the fixed dump, verify agrees,
 * and no row is lost or inserted twice.
 */
import { describe, expect, it } from "vitest";
import { agreedChecksums, DUMP_HEAD, importDump, rows } from "./backup-helpers";
import { call, freshCluster } from "./helpers";

/** Rows of o and tree alternating, so each is an item: 1,000 items close a batch. */
function filler(from: number, to: number): string {
  const out: string[] = [];
  for (let i = from; i <= to; i++)
    out.push(`INSERT INTO o VALUES(${i});`, `INSERT INTO tree VALUES(${i},NULL);`);
  return out.join("\n");
}

function dump(bad: string): string {
  // Statement 5: tree row 1 names 1700, which is in the second batch, after `bad`.
  return `${DUMP_HEAD}CREATE TABLE tree(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES tree(id));
CREATE TABLE o(x);
INSERT INTO tree VALUES(1,1700);
${filler(2, 800)}
${bad}
${filler(801, 1700)}
COMMIT;
`;
}

describe("an import resumed after it failed with rows held", () => {
  // Sequence: run 1 commits batch 0 (tree row 1 held), then fails at
  // `INSERT INTO nosuch` in batch 1. Run 2, same key, the bad line replaced:
  // batch 0 is answered from its result (row 1 held again), the rest goes in.
  it("loads every row once, the held one included", async () => {
    const c = freshCluster("a17b-resume-held");
    const key = { "idempotency-key": "a17b-resume-held-1" };
    const first = await importDump(c, dump("INSERT INTO nosuch VALUES(1);"), key);
    expect(first.status, JSON.stringify(first.body).slice(0, 400)).toBe(400);
    const err = first.body.error as { committed: { rows: number } };
    expect(await rows(c, "SELECT count(*) FROM tree WHERE id = 1")).toEqual([[0]]);
    const [[before]] = (await rows(
      c,
      "SELECT (SELECT count(*) FROM tree) + (SELECT count(*) FROM o)",
    )) as [[number]];
    expect(err.committed.rows).toBe(before);
    const second = await importDump(c, dump("INSERT INTO o VALUES(0);"), key);
    expect(second.status, JSON.stringify(second.body).slice(0, 400)).toBe(200);
    expect(await rows(c, "SELECT count(*), count(DISTINCT id), sum(parent) FROM tree")).toEqual([
      [1700, 1700, 1700],
    ]);
    expect(await rows(c, "SELECT count(*), count(DISTINCT x) FROM o")).toEqual([[1700, 1700]]);
    expect(second.body.rows).toBe(1700 + 1700);
    await agreedChecksums(c);
  });

  // Sequence: log_record_max_bytes 65,536, so batch 0 goes in halves, each
  // committed under keys import:<id>:0 and :1; run 1 fails at the bad line;
  // run 2 (same key, same tunable, fixed line) sends batch 0 whole under key
  // :0 again, whose saved result is the first half's: observed 409
  // IDEMPOTENCY_KEY_REUSED at statement 3, saying "nothing was committed".
  it("resumes an import whose batches went in halves", async () => {
    const c = freshCluster("a17b-resume-halves");
    const patched = await call("PATCH", `/admin/clusters/${c}/tunables`, {
      body: { log_record_max_bytes: 65_536 },
    });
    expect(patched.status).toBe(200);
    const key = { "idempotency-key": "a17b-resume-halves-1" };
    const first = await importDump(c, dump("INSERT INTO nosuch VALUES(1);"), key);
    expect(first.status, JSON.stringify(first.body).slice(0, 400)).toBe(400);
    // Batch 0 (1,000 items) was over 65,536 bytes and went in halves, each committed.
    const committed = (first.body.error as { committed: { lsn: number; rows: number } }).committed;
    expect(committed.lsn).toBeGreaterThan(1);
    const second = await importDump(c, dump("INSERT INTO o VALUES(0);"), key);
    expect(second.status, JSON.stringify(second.body).slice(0, 400)).toBe(200);
    expect(await rows(c, "SELECT count(*), count(DISTINCT id), sum(parent) FROM tree")).toEqual([
      [1700, 1700, 1700],
    ]);
    expect(await rows(c, "SELECT count(*) FROM o")).toEqual([[1700]]);
    expect(second.body.rows).toBe(3400);
    await agreedChecksums(c);
  });
});
