/**
 * What the guard and the divergence check cost per statement, measured on one
 * Durable Object's SQLite with the production code paths (no replication, no
 * RPC): each operation runs `n` times in one call, so the caller, timing the
 * call from outside (the runtime's clock does not advance inside synchronous
 * work), divides by `n`. bench/costs.ts drives it and prints the table.
 *
 *   bare       the INSERT alone, on a table without capture triggers
 *   guarded    the master's path on that text: lexer, binding, the compiled
 *              program's facts (cached per text) and the policy, then the INSERT
 *   explain    the guard on a text never seen before: EXPLAIN and its analysis
 *   captured   the master's whole path on a captured table: guard, INSERT,
 *              capture triggers, DELETE ... RETURNING and the effects digest
 *   commit     the master's whole local commit of a keyed single-row insert:
 *              the captured path, the log record and the saved result
 *   commit-turns  the same, each in an event-loop turn of its own, so each is
 *              committed to storage on its own, as a request's commit is (less
 *              `turns`, the turns alone: what the storage commit costs)
 *   apply-fast a replica applying such an entry's rows, capture off, each
 *              UPDATE/DELETE checked to find its row (tables no foreign key joins)
 *   apply-checked  the same on a table a foreign key joins: capture on and the
 *              digest compared (as for DDL and replayed statements)
 * The apply operations apply what a `prepare-*` call made just before.
 */
import type { LogEntry, LogRecord, Statement } from "../core/protocol";
import { RecordBudget } from "../core/record-budget";
import { type Change, effectsHash, UNCAPTURED } from "../core/row-capture";
import { quoteIdent } from "../core/sql-lexer";
import { guardedStatement } from "../core/sql-params";
import { checkTouched, classifyWrite } from "../core/sql-policy";
import { APPLYING_TABLE } from "../core/trigger-guard";
import { BatchApplier } from "../durable-objects/sqlite/apply";
import { syncCaptureTriggers } from "../durable-objects/sqlite/capture";
import { ResultBudget } from "../durable-objects/sqlite/read";
import type { SqlNode } from "../durable-objects/sqlite/schema";
import { Schema } from "../durable-objects/sqlite/schema";
import { compile } from "../durable-objects/sqlite/compile";
import { commitLocal } from "../durable-objects/master/commit";
import { NodeStore } from "../durable-objects/node-store";
import { prepare, runWrite } from "../durable-objects/sqlite/write";
import { migrate } from "../migrations";
import type { CostRequest } from "./cost-types";

const LIMITS = { statementMinRows: 1000, recordMaxBytes: 8_000_000 };

class RollBack extends Error {}

/**
 * The next turn of the runtime's event loop: workerd commits the writes made
 * since the last await as one transaction on the turn after them.
 */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * One object's probe: tables `plain` (capture triggers dropped), `cap`
 * (captured, no foreign key) and `fk` (captured, joined by a foreign key).
 */
export class CostProbe {
  private readonly node: SqlNode;
  private readonly prepared = new Map<string, LogRecord[]>();
  private readonly store: NodeStore;
  private lsn = 0;
  private logEnd = 0;

  constructor(private readonly storage: DurableObjectStorage) {
    migrate(storage);
    const sql = storage.sql;
    this.node = { sql, schema: new Schema(sql) };
    this.store = new NodeStore(storage.kv);
    storage.transactionSync(() => {
      sql.exec("CREATE TABLE IF NOT EXISTS plain (id INTEGER PRIMARY KEY, v TEXT)");
      sql.exec("CREATE TABLE IF NOT EXISTS cap (id INTEGER PRIMARY KEY, v TEXT)");
      sql.exec("CREATE TABLE IF NOT EXISTS parent (id INTEGER PRIMARY KEY)");
      sql.exec(
        "CREATE TABLE IF NOT EXISTS fk (id INTEGER PRIMARY KEY, p INTEGER REFERENCES parent (id), v TEXT)",
      );
      this.node.schema.invalidate();
      syncCaptureTriggers(sql, this.node.schema);
      for (const object of this.node.schema.objects()) {
        if (object.type === "trigger" && object.tblName === "plain") {
          sql.exec(`DROP TRIGGER ${quoteIdent(object.name)}`);
        }
      }
      this.node.schema.invalidate();
    });
  }

  /** Runs `op` `n` times (or prepares what an apply op needs); returns how many ran. */
  async run(request: CostRequest): Promise<number> {
    const { op, n } = request;
    switch (op) {
      case "turns":
        for (let i = 0; i < n; i++) await nextTurn();
        return n;
      case "commit-turns":
        // Each commit in a turn of its own: the runtime makes each its own
        // durable transaction (the WAL written, and synced), as a request's is.
        for (let i = 0; i < n; i++) {
          this.commit(i);
          await nextTurn();
        }
        return n;
      case "none":
        return 0;
      case "bare":
        return this.each(n, (i) => {
          this.node.sql.exec("INSERT INTO plain (v) VALUES (?)", `value ${i}`).toArray();
        });
      case "guarded":
        return this.each(n, (i) =>
          this.guarded("INSERT INTO plain (v) VALUES (?)", [`value ${i}`]),
        );
      case "explain":
        return this.each(n, (i) => {
          // A new text each time (a literal, not a parameter): no cache helps.
          this.guarded(`INSERT INTO plain (v) VALUES ('probe ${Date.now()} ${i}')`, []);
        });
      case "captured":
        return this.each(n, (i) => {
          this.write("INSERT INTO cap (v) VALUES (?)", [`value ${i}`]);
        });
      case "commit":
        for (let i = 0; i < n; i++) this.commit(i);
        return n;
      case "prepare-fast":
      case "prepare-checked":
        return this.prepare(op === "prepare-fast" ? "cap" : "fk", n);
      case "apply-fast":
      case "apply-checked":
        return this.apply(op === "apply-fast" ? "cap" : "fk");
    }
  }

  private each(n: number, body: (i: number) => void): number {
    for (let i = 0; i < n; i++) this.storage.transactionSync(() => body(i));
    return n;
  }

  /** The guard as runWrite applies it, then the statement, without capture. */
  private guarded(text: string, params: unknown[]): void {
    const bound = prepare(text, params as Statement["params"]);
    const facts = compile(this.node, bound);
    checkTouched(facts, this.node.schema);
    if (classifyWrite(facts) !== "rows") throw new Error(`not a write: ${text}`);
    const run = guardedStatement(bound);
    this.node.sql.exec(run.sql, ...run.params).toArray();
  }

  private write(sql: string, params: unknown[]): LogEntry | null {
    return runWrite(
      this.node,
      { sql, params: params as Statement["params"] },
      new ResultBudget(),
      "objects",
      {
        statementMinRows: LIMITS.statementMinRows,
        record: new RecordBudget(LIMITS.recordMaxBytes),
      },
    ).entry;
  }

  /** The master's commitLocal of one keyed insert, as a request makes it. */
  private commit(i: number): void {
    this.lsn++;
    const done = commitLocal(this.storage, this.node, this.store, {
      lsn: this.lsn,
      term: 1,
      logEnd: this.logEnd,
      statements: [{ sql: "INSERT INTO cap (v) VALUES (?)", params: [`value ${i}`] }],
      format: "objects",
      key: `probe-${this.lsn}-${Date.now()}`,
      requestHash: "0123456789abcdef",
      statementMinRows: LIMITS.statementMinRows,
      recordMaxBytes: LIMITS.recordMaxBytes,
    });
    this.logEnd += done.bytes;
  }

  /** `n` records as the master logs single-row inserts into `table`, each its own new rowid. */
  private prepare(table: string, n: number): number {
    const sql = this.node.sql;
    const top = Number(sql.exec(`SELECT coalesce(max(id), 0) AS m FROM ${table}`).one().m);
    const records: LogRecord[] = [];
    for (let i = 0; i < n; i++) {
      let entry: LogEntry | null = null;
      try {
        this.storage.transactionSync(() => {
          entry = this.write(`INSERT INTO ${table} (v) VALUES (?)`, [`value ${i}`]);
          throw new RollBack();
        });
      } catch (error) {
        if (!(error instanceof RollBack)) throw error;
      }
      if (entry === null) throw new Error("the probe's insert logged nothing");
      records.push({ lsn: i + 1, term: 1, ts: 0, end: 0, entries: [rekey(entry, top + 1 + i)] });
    }
    this.prepared.set(table, records);
    return n;
  }

  /** Applies what `prepare` made, as a replica does, one record per transaction. */
  private apply(table: string): number {
    const sql = this.node.sql;
    const records = this.prepared.get(table) ?? [];
    this.prepared.delete(table);
    this.storage.transactionSync(() => {
      sql.exec(`DELETE FROM ${APPLYING_TABLE}`);
      sql.exec(`INSERT INTO ${APPLYING_TABLE} (x) VALUES (${UNCAPTURED})`);
    });
    for (const record of records) {
      this.storage.transactionSync(() => {
        const applier = new BatchApplier(this.node);
        applier.apply(record);
        applier.finish();
      });
    }
    this.storage.transactionSync(() => {
      sql.exec(`DELETE FROM ${APPLYING_TABLE}`);
    });
    return records.length;
  }
}

/** The entry with its row's key replaced, and its digest made again. */
function rekey(entry: LogEntry, id: number): LogEntry {
  if (entry.kind !== "rows") throw new Error("the probe expects a rows entry");
  const changes = entry.changes.map((change) => {
    const out: Change = { ...change };
    if (change.nk !== undefined) out.nk = change.nk.replace(/^i-?\d+/, `i${id}`);
    if (change.img !== undefined) out.img = change.img.replace(/^i-?\d+/, `i${id}`);
    return out;
  });
  return { ...entry, changes, effects: effectsHash(changes) };
}
