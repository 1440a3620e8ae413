import { describe, expect, it } from "vitest";
import { type QueryOutcome, type SltExecutor, type StatementOutcome, runScript } from "./slt/run";
import { type SqlValue, sqlInteger, sqlText } from "./slt/sql-value";
import { summarize } from "./slt/summary";

const ints = (...values: number[]): SqlValue[][] => values.map((v) => [sqlInteger(BigInt(v))]);
const rowsOf = (columns: string[], rows: SqlValue[][]): QueryOutcome => ({
  ok: true,
  columns,
  rows,
});

/** Answers queries from a table of SQL -> outcome; statements succeed unless listed. */
function scripted(
  queries: Record<string, QueryOutcome>,
  statements: Record<string, StatementOutcome> = {},
): SltExecutor & { ran: string[] } {
  const ran: string[] = [];
  return {
    ran,
    async statement(sql) {
      ran.push(sql);
      return statements[sql] ?? { ok: true };
    },
    async query(sql) {
      ran.push(sql);
      const outcome = queries[sql];
      if (outcome === undefined) throw new Error(`unexpected query ${sql}`);
      return outcome;
    },
  };
}

const run = (script: string, executor: SltExecutor) => runScript("inline.test", script, executor);

describe("sqllogictest runner", () => {
  it("passes results that match, as values and past the threshold as a known md5", async () => {
    const executor = scripted({
      "SELECT a FROM t": rowsOf(["a"], ints(9, 8, 7, 6, 5, 4, 3, 2, 1)),
      "SELECT a FROM t LIMIT 2": rowsOf(["a"], ints(1, 2)),
    });
    const report = await run(
      [
        "statement ok",
        "CREATE TABLE t(a)",
        "",
        "query I rowsort",
        "SELECT a FROM t",
        "----",
        // printf '1\n2\n3\n4\n5\n6\n7\n8\n9\n' | md5sum
        "9 values hashing to 22e400a2ddbb013acf2a5852d6ab69fc",
        "",
        "query I nosort",
        "SELECT a FROM t LIMIT 2",
        "----",
        "1",
        "2",
      ].join("\n"),
      executor,
    );
    expect(report).toMatchObject({ records: 3, passed: 3, failed: 0, failures: [] });
    expect(report.timing).toMatchObject({ statements: 1, queries: 2 });
  });

  it("fails a wrong value, a wrong hash and a missing row, with what differs", async () => {
    const executor = scripted({
      "SELECT 1": rowsOf(["1"], ints(2)),
      "SELECT a FROM t": rowsOf(["a"], ints(1, 2, 3, 4, 5, 6, 7, 8, 10)),
      "SELECT a FROM u": rowsOf(["a"], ints(1)),
    });
    const report = await run(
      "query I nosort\nSELECT 1\n----\n1\n\n" +
        "query I rowsort\nSELECT a FROM t\n----\n9 values hashing to 22e400a2ddbb013acf2a5852d6ab69fc\n\n" +
        "query I nosort\nSELECT a FROM u\n----\n1\n2\n",
      executor,
    );
    expect(report).toMatchObject({ records: 3, passed: 0, failed: 3 });
    expect(report.failures[0]).toMatchObject({
      line: 1,
      what: "wrong result",
      expected: ["1"],
      got: ["2"],
    });
    // A differing hash shows the values behind it.
    expect(report.failures[1]?.got?.slice(1)).toEqual([
      "1",
      "10",
      "2",
      "3",
      "4",
      "5",
      "6",
      "7",
      "8",
    ]);
    expect(report.failures[2]).toMatchObject({ expected: ["1", "2"], got: ["1"] });
  });

  it("wants results under one label to agree", async () => {
    const executor = scripted({
      "SELECT a FROM t": rowsOf(["a"], ints(1, 2)),
      "SELECT b FROM t": rowsOf(["b"], ints(2, 1)),
      "SELECT c FROM t": rowsOf(["c"], ints(1, 3)),
    });
    const report = await run(
      "query I rowsort same\nSELECT a FROM t\n----\n1\n2\n\n" +
        "query I rowsort same\nSELECT b FROM t\n----\n1\n2\n\n" +
        // Its own expected lines match, but not the label's earlier result.
        "query I rowsort same\nSELECT c FROM t\n----\n1\n3\n",
      executor,
    );
    expect(report).toMatchObject({ passed: 2, failed: 1 });
    expect(report.failures[0]).toMatchObject({
      line: 13,
      what: "labeled result [same] does not agree with previous values",
    });
  });

  it("files the label of a record skipped for this engine, from its expected result", async () => {
    const executor = scripted({ "SELECT a FROM t": rowsOf(["a"], ints(1, 2)) });
    const report = await run(
      "onlyif mysql\nquery I rowsort lbl\nSELECT a FROM t\n----\n1\n3\n\n" +
        "query I rowsort lbl\nSELECT a FROM t\n----\n1\n2\n",
      executor,
    );
    expect(report).toMatchObject({ records: 2, skippedForEngine: 1, passed: 0, failed: 1 });
    expect(report.failures[0]?.what).toMatch(/labeled result \[lbl\]/);
  });

  it("skips records for other engines and runs the ones for sqlite", async () => {
    const executor = scripted({ "SELECT 1": rowsOf(["1"], ints(1)) });
    const report = await run(
      "onlyif mysql\nstatement ok\nMYSQL ONLY\n\n" +
        "skipif sqlite\nstatement ok\nNOT SQLITE\n\n" +
        "onlyif SQLite\nskipif postgresql\nquery I nosort\nSELECT 1\n----\n1\n\n" +
        "skipif mysql\nstatement ok\nNOT MYSQL\n",
      executor,
    );
    expect(report).toMatchObject({ records: 4, passed: 2, skippedForEngine: 2, failed: 0 });
    expect(executor.ran).toEqual(["SELECT 1", "NOT MYSQL"]);
  });

  it("stops at halt, unless the halt is for another engine", async () => {
    const executor = scripted({});
    const report = await run(
      "statement ok\nA\n\nonlyif mysql\nhalt\n\nstatement ok\nB\n\nhalt\n\nstatement ok\nC\n",
      executor,
    );
    expect(executor.ran).toEqual(["A", "B"]);
    expect(report).toMatchObject({ records: 2, passed: 2, haltedAt: 10 });
  });

  it("wants statement error to fail and statement ok to succeed", async () => {
    const refused = { ok: false, code: "INVALID_SQL", message: "no such table: nope" } as const;
    const executor = scripted(
      {},
      { "INSERT INTO nope VALUES(1)": refused, "SELECT 2": { ok: true } },
    );
    const report = await run(
      "statement error\nINSERT INTO nope VALUES(1)\n\nstatement error\nSELECT 2\n\n" +
        "statement ok\nINSERT INTO nope VALUES(1)\n",
      executor,
    );
    expect(report).toMatchObject({ passed: 1, failed: 2 });
    expect(report.failures.map((f) => f.what)).toEqual([
      "statement succeeded, expected an error",
      "refused INVALID_SQL: no such table: nope",
    ]);
  });

  it("skips a refusal that is a documented limit and fails any other", async () => {
    const compound =
      "SELECT 1 UNION SELECT 2 UNION SELECT 3 UNION SELECT 4 UNION SELECT 5 UNION SELECT 6";
    const notAuthorized = {
      ok: false,
      code: "INVALID_SQL",
      message: "not authorized: SQLITE_AUTH",
    } as const;
    const executor = scripted(
      {
        [compound]: {
          ok: false,
          code: "INVALID_SQL",
          message: "too many terms in compound SELECT: SQLITE_ERROR",
        },
      },
      { "CREATE TEMP TABLE x(a)": notAuthorized, "CREATE TABLE y(a)": notAuthorized },
    );
    const report = await run(
      `query I rowsort\n${compound}\n----\n1\n2\n3\n4\n5\n6\n\n` +
        "statement ok\nCREATE TEMP TABLE x(a)\n\nstatement ok\nCREATE TABLE y(a)\n",
      executor,
    );
    expect(report).toMatchObject({
      records: 3,
      passed: 0,
      failed: 1,
      skippedByLimit: { "compound-select-terms": 1, "temp-schema": 1 },
    });
    // The platform's bare "not authorized" is a documented limit only for TEMP objects.
    expect(report.failures[0]).toMatchObject({
      line: 14,
      what: "refused INVALID_SQL: not authorized: SQLITE_AUTH",
    });
  });

  it("fails a result with another number of columns than the record's types", async () => {
    const executor = scripted({
      "SELECT 1, 2": rowsOf(["1", "2"], [[sqlInteger(1n), sqlInteger(2n)]]),
    });
    const report = await run("query I nosort\nSELECT 1, 2\n----\n1\n", executor);
    expect(report.failures[0]?.what).toBe("wrong number of result columns: expected 1, got 2");
  });

  it("fails a record whose executor throws, and goes on with the next", async () => {
    const executor = scripted({ "SELECT 'a'": rowsOf(["'a'"], [[sqlText("a")]]) });
    const report = await run(
      "query I nosort\nSELECT 9\n----\n9\n\nquery T nosort\nSELECT 'a'\n----\na\n",
      executor,
    );
    expect(report).toMatchObject({ passed: 1, failed: 1 });
    expect(report.failures[0]?.what).toMatch(/^executor failed: Error: unexpected query SELECT 9/);
  });

  it("compares values, not a hash, once a script sets the threshold to 0", async () => {
    const executor = scripted({
      "SELECT a FROM t": rowsOf(["a"], ints(1, 2, 3, 4, 5, 6, 7, 8, 9)),
    });
    const report = await run(
      "hash-threshold 0\n\nquery I nosort\nSELECT a FROM t\n----\n1\n2\n3\n4\n5\n6\n7\n8\n9\n",
      executor,
    );
    expect(report).toMatchObject({ passed: 1, failed: 0 });
  });

  it("stops at a record type it does not know, as the reference does", async () => {
    const executor = scripted({});
    const report = await run("statement ok\nA\n\nfrobnicate\n\nstatement ok\nB\n", executor);
    expect(executor.ran).toEqual(["A"]);
    expect(report).toMatchObject({ records: 2, passed: 1, failed: 1 });
  });
});

describe("sqllogictest run summary", () => {
  it("gives the counts, the skips per limit and each failure with what differs", async () => {
    const executor = scripted(
      { "SELECT 1": rowsOf(["1"], ints(2)) },
      {
        "PRAGMA x": {
          ok: false,
          code: "INVALID_SQL",
          message: "PRAGMA statements are not allowed: x",
        },
      },
    );
    const report = await run(
      "statement ok\nPRAGMA x\n\nonlyif mysql\nstatement ok\nM\n\nquery I nosort\nSELECT 1\n----\n1\n",
      executor,
    );
    const lines = summarize(report).split("\n");
    expect(lines[0]).toMatch(
      /^inline\.test: 3 records, 0 passed, 1 skipped by limit, 1 for other engines, 1 failed; [\d.]+ s \(1 statements [\d.]+ s, 1 queries [\d.]+ s\)$/,
    );
    expect(lines.slice(1)).toEqual([
      "  skipped by limit statement-kind: 1",
      "  line 8: wrong result",
      "    SELECT 1",
      "    expected: 1",
      "    got:      2",
    ]);
  });
});
