/**
 * The pure parts of export and import: the dump's literals from exact cells,
 * the load order of tables, the statement splitter at every chunk boundary,
 * the reading of a dump's statements into exact values, and the batches they
 * make. The routes and the round trip are in test/backup.test.ts.
 */
import { describe, expect, it } from "vitest";
import { loadOrder } from "../core/dump-order";
import { StatementSplitter } from "../core/dump-splitter";
import { type DumpStatement, parseDumpStatement } from "../core/dump-statement";
import { ApiError } from "../core/errors";
import { BATCH_ROWS, ImportBatcher, ungrouped } from "../core/import-batcher";
import { insertLine, insertPrefix, literalFromCell, sequenceLines } from "../core/sql-dump";
import { encodeCell, type Exact, toHex } from "../core/sql-value";

const utf8 = new TextEncoder();

function split(text: string, chunk: number): { text: string; line: number }[] {
  const splitter = new StatementSplitter();
  const out = [];
  for (let i = 0; i < text.length; i += chunk) out.push(...splitter.push(text.slice(i, i + chunk)));
  out.push(...splitter.finish());
  return out;
}

function values(statement: DumpStatement): Exact[][] {
  if (statement.kind !== "insert") throw new Error(`not an insert: ${statement.kind}`);
  return statement.rows.map((row) => row.map((v) => v.value));
}

describe("the dump's literals", () => {
  it("write every cell as the literal SQLite reads back to the same value", () => {
    const cases: [string, string][] = [
      ["n", "NULL"],
      ["i-9223372036854775808", "-9223372036854775808"],
      ["i9223372036854775807", "9223372036854775807"],
      ["r2.0", "2.0"],
      ["r-0.0", "-0.0"],
      ["r9.0e+999", "9.0e+999"],
      ["r-9.0e+999", "-9.0e+999"],
      ["r1.0e+21", "1.0e+21"],
      ["sit's", "'it''s'"],
      ["s", "''"],
      [`t${toHex(utf8.encode("é🎉"))}`, "'é🎉'"],
      // Control characters and bytes that are not UTF-8 keep their bytes exactly.
      [`t${toHex(utf8.encode("a\nb"))}`, "CAST(X'610A62' AS TEXT)"],
      ["tFF00FE41", "CAST(X'FF00FE41' AS TEXT)"],
      ["b", "X''"],
      ["b00FF", "X'00FF'"],
    ];
    for (const [cell, literal] of cases) expect(literalFromCell(cell), cell).toBe(literal);
    expect(() => literalFromCell("?x")).toThrow(/bad cell/);
  });

  it("name every column, the rowid's expression first, and quote names with quotes in them", () => {
    const prefix = insertPrefix('odd "name"', ["oid", '"rowid"', '"a b"']);
    expect(insertLine(prefix, "i1\u001fs2\u001fn")).toBe(
      `INSERT INTO "odd ""name"""(oid,"rowid","a b") VALUES(1,'2',NULL);\n`,
    );
    expect(sequenceLines([{ name: "t", seq: "i10" }])).toBe(
      "DELETE FROM sqlite_sequence;\nINSERT INTO sqlite_sequence VALUES('t',10);\n",
    );
    expect(sequenceLines([])).toBe("");
  });
});

describe("the load order", () => {
  const names = (tables: { name: string }[]) => tables.map((t) => t.name);

  it("puts each table after the tables its foreign keys name, else keeps SQLite's order", () => {
    const tables = [
      { name: "grandchild", parents: ["Child"] },
      { name: "child", parents: ["parent", "child"] },
      { name: "solo", parents: [] },
      { name: "parent", parents: ["missing"] },
    ];
    expect(names(loadOrder(tables))).toEqual(["solo", "parent", "child", "grandchild"]);
  });

  it("keeps SQLite's order inside a cycle", () => {
    const tables = [
      { name: "a", parents: ["b"] },
      { name: "b", parents: ["a"] },
      { name: "c", parents: ["a"] },
    ];
    expect(names(loadOrder(tables))).toEqual(["a", "b", "c"]);
  });
});

describe("the statement splitter", () => {
  const dump = [
    "-- a comment; with a semicolon",
    "PRAGMA foreign_keys=OFF;",
    "BEGIN TRANSACTION;",
    `CREATE TABLE "x;y" ("a;b" TEXT, [c;d], \`e;f\`);`,
    "INSERT INTO \"x;y\" VALUES('it''s; here', /* ; */ 'a\nb', X'00');",
    'CREATE TRIGGER tr AFTER INSERT ON "x;y" BEGIN',
    "  UPDATE \"x;y\" SET \"a;b\" = CASE WHEN 1 THEN 'x;' ELSE 'y' END;",
    "  SELECT CASE 1 WHEN 1 THEN 2 END; END;",
    'CREATE TEMP TRIGGER t2 AFTER DELETE ON "x;y" BEGIN SELECT 1; END;',
    "CREATE TABLE end_(x); SELECT 1 -- trailing, without a semicolon",
  ].join("\n");

  it("ends statements where SQLite does, whatever the chunks' boundaries", () => {
    const whole = split(dump, dump.length);
    expect(whole.map((s) => s.text.split(" ")[0])).toEqual([
      "PRAGMA",
      "BEGIN",
      "CREATE",
      "INSERT",
      "CREATE",
      "CREATE",
      "CREATE",
      "SELECT",
    ]);
    expect(whole[3]?.text).toBe(`INSERT INTO "x;y" VALUES('it''s; here', /* ; */ 'a\nb', X'00')`);
    expect(whole[4]?.text).toMatch(/^CREATE TRIGGER tr .* END; END$/s);
    expect(whole.map((s) => s.line)).toEqual([2, 3, 4, 5, 7, 10, 11, 11]);
    for (let chunk = 1; chunk <= 40; chunk++)
      expect(split(dump, chunk), `chunk ${chunk}`).toEqual(whole);
  });

  it("gives an unterminated string to the end as one statement, for the tokenizer to refuse", () => {
    const parts = split("SELECT 1; INSERT INTO t VALUES('open", 3);
    expect(parts.map((p) => p.text)).toEqual(["SELECT 1", "INSERT INTO t VALUES('open"]);
    expect(() => parseDumpStatement(parts[1]?.text ?? "")).toThrow(ApiError);
    expect(split(" ;; -- nothing\n/* at all */", 2)).toEqual([]);
  });
});

describe("a dump's statements", () => {
  it("skip the dump's own PRAGMA, BEGIN and COMMIT, and refuse what cannot be loaded", () => {
    const skipped = ["PRAGMA foreign_keys=OFF", "BEGIN TRANSACTION", "BEGIN", "COMMIT", "END"];
    expect(skipped.map((sql) => parseDumpStatement(sql))).toEqual([
      { kind: "skip" },
      { kind: "skip", transaction: "begin" },
      { kind: "skip", transaction: "begin" },
      { kind: "skip", transaction: "commit" },
      { kind: "skip", transaction: "commit" },
    ]);
    expect(parseDumpStatement("PRAGMA journal_mode=WAL").kind).toBe("sql");
    expect(() => parseDumpStatement("ROLLBACK")).toThrow(/rolls back/);
    expect(() => parseDumpStatement("PRAGMA writable_schema=ON")).toThrow(/CREATE VIRTUAL TABLE/);
  });

  it("reads TEXT as sqlite3 .dump writes a newline or carriage return in it", () => {
    const values = (sql: string) => {
      const statement = parseDumpStatement(sql);
      return statement.kind === "insert" ? statement.rows[0]?.map((v) => v.value) : statement.kind;
    };
    expect(values("INSERT INTO t VALUES(replace('a\\nb\\n','\\n',char(10)))")).toEqual(["a\nb\n"]);
    expect(
      values("INSERT INTO t VALUES(1,replace(replace('x\\r\\ny','\\r',char(13)),'\\n',char(10)))"),
    ).toEqual([1n, "x\r\ny"]);
    // Only that shape: anything else is SQL for the guard to run.
    expect(values("INSERT INTO t VALUES(replace('a','',char(10)))")).toBe("sql");
    expect(values("INSERT INTO t VALUES(replace('a','a',char(55296)))")).toBe("sql");
    expect(values("INSERT INTO t VALUES(replace(x'00','a',char(10)))")).toBe("sql");
    expect(values("INSERT INTO t VALUES(replace('a','a',char(10),1))")).toBe("sql");
  });

  it("read sqlite_sequence's lines, and nothing but their exact shape", () => {
    expect(parseDumpStatement("DELETE FROM sqlite_sequence")).toEqual({ kind: "sequence-reset" });
    expect(
      parseDumpStatement(
        `INSERT INTO "sqlite_sequence"(name,seq) VALUES('t',9223372036854775807),('u',-1)`,
      ),
    ).toEqual({
      kind: "sequence",
      rows: [
        { name: "t", seq: 9223372036854775807n },
        { name: "u", seq: -1n },
      ],
    });
    for (const sql of [
      "INSERT INTO sqlite_sequence VALUES('t','5')",
      "INSERT INTO sqlite_sequence VALUES('t',5,6)",
      "INSERT INTO sqlite_sequence SELECT 't', 5",
      "INSERT INTO sqlite_sequence(seq,name) VALUES(5,'t')",
    ]) {
      expect(() => parseDumpStatement(sql), sql).toThrow(
        /sqlite_sequence VALUES\('table', integer\)/,
      );
    }
    expect(parseDumpStatement("DELETE FROM sqlite_sequence WHERE name = 't'").kind).toBe("sql");
  });

  it("read each literal as the value SQLite would", () => {
    const parsed = parseDumpStatement(
      'INSERT INTO "t"(rowid,a) VALUES(-9223372036854775808,9223372036854775808),(+7,-0.0),' +
        "(9.0e+999,-9.0e+999),(.5,1e3),(NULL,'it''s'),(X'00ff',CAST(X'FF41' AS TEXT))",
    );
    expect(parsed.kind === "insert" && parsed.prefix).toBe('INSERT INTO "t" ( rowid , a )');
    // Comments between the tokens are left out of what the rows share: `--` would swallow the rest.
    const commented = parseDumpStatement("INSERT INTO t(a) -- note\nVALUES(1)");
    expect(commented.kind === "insert" && commented.prefix).toBe("INSERT INTO t ( a )");
    const got = values(parsed).flat().map(encodeCell);
    expect(got).toEqual([
      "i-9223372036854775808",
      "r9223372036854776000.0", // a REAL: past 64 bits, as SQLite reads it
      "i7",
      "r-0.0",
      "r9.0e+999",
      "r-9.0e+999",
      "r0.5",
      "r1000.0",
      "n",
      "sit's",
      "b00FF",
      "tFF41",
    ]);
  });

  it("leave anything that is not a plain INSERT of literals to the guard, as SQL", () => {
    for (const sql of [
      "INSERT INTO t VALUES(random())",
      "INSERT INTO t VALUES(0x10)",
      "INSERT INTO t VALUES(1_000)",
      "INSERT OR REPLACE INTO t VALUES(1)",
      "INSERT INTO t SELECT 1",
      "INSERT INTO t VALUES(1),(1,2)",
      "INSERT INTO t VALUES(1) RETURNING *",
      "INSERT INTO t DEFAULT VALUES",
      "INSERT INTO t VALUES(CAST(X'41' AS BLOB))",
    ]) {
      expect(parseDumpStatement(sql), sql).toEqual({ kind: "sql", sql });
    }
  });
});

describe("import batches", () => {
  const insert = (table: string, row: string, number: number) => ({
    statement: parseDumpStatement(`INSERT INTO "${table}"(rowid,a) VALUES${row}`),
    number,
    line: number,
  });

  it("make consecutive INSERTs into one table one statement of bound values, up to 99 of them", () => {
    const batcher = new ImportBatcher();
    for (let i = 1; i <= 60; i++) batcher.add(insert("t", `(${i},'v${i}')`, i));
    batcher.add(insert("u", "(1,X'00')", 61));
    const [batch] = batcher.finish();
    expect(batch?.items.map((item) => (item.kind === "sql" ? item.params.length : 0))).toEqual([
      98, 22, 2,
    ]);
    expect(batch?.items[0]).toMatchObject({
      sql: expect.stringMatching(/^INSERT INTO "t" \( rowid , a \) VALUES\(\?,\?\),/),
    });
    expect(batch?.spans.map((s) => [s.first, s.last])).toEqual([
      [1, 49],
      [50, 60],
      [61, 61],
    ]);
    // Sent again row by row, each row is its own statement again, with its own number.
    const single = ungrouped(batch ?? { items: [], spans: [], groupings: [], rows: 0, bytes: 0 });
    expect(single.items).toHaveLength(61);
    expect(single.spans[59]).toEqual({ first: 60, last: 60, line: 60 });
    expect(single.items[59]).toEqual({
      kind: "sql",
      sql: 'INSERT INTO "t" ( rowid , a ) VALUES(?,?)',
      params: [60n, "v60"],
    });
  });

  it("keep the smallest values of a row wider than 99 as the dump's own literals", () => {
    const row = `(7,${Array.from({ length: 100 }, (_, i) => (i === 5 ? "'a long value'" : String(i))).join(",")})`;
    const batcher = new ImportBatcher();
    batcher.add(insert("wide", row, 1));
    const item = batcher.finish()[0]?.items[0];
    if (item?.kind !== "sql") throw new Error("no item");
    expect(item.params).toHaveLength(99);
    expect(item.params).toContain("a long value");
    expect(item.sql.match(/\?/g)).toHaveLength(99);
  });

  it("close a batch at its row limit, and never split one multi-row statement's values", () => {
    const batcher = new ImportBatcher();
    const total = BATCH_ROWS + 100;
    for (let i = 1; i <= total; i++) batcher.add(insert("t", `(${i},${i})`, i));
    const batches = [...batcher.take(), ...batcher.finish()];
    // 49 rows of two values fill a statement; the batch closes after the statement that reaches the limit.
    const first = Math.ceil(BATCH_ROWS / 49) * 49;
    expect(batches.map((b) => b.rows)).toEqual([first, total - first]);
    const params = batches.flatMap((b) =>
      b.items.flatMap((i) => (i.kind === "sql" ? i.params : [])),
    );
    expect(params).toHaveLength(2 * total);
  });
});
