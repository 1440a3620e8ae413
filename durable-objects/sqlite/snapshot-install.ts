/**
 * Rebuilding a replica from the master's snapshot. Images are staged first,
 * in plain `_repl_stage_<n> (pos, img)` tables, each chunk its own small
 * transaction, and they survive a restart, so a stream that broke resumes
 * where it stopped. `end` then swaps the whole database in one transaction:
 * user objects dropped, tables created as the master stored them, rows
 * applied from their exact images (foreign keys are checked at its commit, so
 * no order between tables matters), then indexes, views, triggers, capture
 * triggers and sqlite_sequence. Nothing fires on the way: a replica's trigger guard flag is
 * always set.
 */
import type { SnapshotMessage, SnapshotReply } from "../../core/protocol";
import { isUserName } from "../../core/reserved-names";
import { applyChanges } from "../../core/row-apply";
import type { Change } from "../../core/row-capture";
import { quoteIdent } from "../../core/sql-lexer";
import { ensureReplicaFlag, restoreSequence } from "./apply";
import { syncCaptureTriggers } from "./capture";
import { restoreFts5Settings } from "./fts5-settings";
import { run } from "./run";
import type { SqlNode } from "./schema";

const STAGE_PREFIX = "_repl_stage_";
const ROWS_PER_INSERT = 45;
const INSTALL_CHUNK = 1000;

export interface SnapshotState {
  id: string;
  lsn: number;
}

const stage = (i: number) => quoteIdent(`${STAGE_PREFIX}${i}`);

/** Drops the staging tables; the schema is read again (a drop can move root pages). */
function dropStages(node: SqlNode): void {
  const { sql } = node;
  for (const { name } of sql
    .exec<{ name: string }>(
      "SELECT name FROM sqlite_schema WHERE type = 'table' AND substr(name, 1, ?) = ?",
      STAGE_PREFIX.length,
      STAGE_PREFIX,
    )
    .toArray()) {
    sql.exec(`DROP TABLE ${quoteIdent(name)}`);
  }
  node.schema.invalidate();
}

function dropUserObjects(node: SqlNode): void {
  const objects = node.schema
    .objects()
    .filter((o) => isUserName(o.name) && !node.schema.isShadow(o.name));
  // Triggers and views first, then tables (a virtual table takes its shadows with it).
  for (const kind of ["trigger", "view", "table"]) {
    for (const o of objects.filter((x) => x.type === kind)) {
      node.sql.exec(`DROP ${kind.toUpperCase()} IF EXISTS ${quoteIdent(o.name)}`);
    }
  }
  node.schema.invalidate();
}

/**
 * One snapshot step on the replica. `state` is the snapshot being staged (kept
 * in KV by the caller), or null; the caller persists what this returns.
 */
export function snapshotStep(
  storage: DurableObjectStorage,
  node: SqlNode,
  state: SnapshotState | null,
  message: Exclude<SnapshotMessage, { phase: "results" }>,
  /** Runs in the install's own transaction: the node's log and flags move with its tables. */
  onInstall: () => void = () => {},
): { reply: SnapshotReply; state: SnapshotState | null; installedLsn?: number } {
  const sql = node.sql;
  if (message.phase === "begin") {
    return storage.transactionSync(() => {
      if (state?.id !== message.id) {
        dropStages(node);
        for (let i = 0; i < message.tables; i++) {
          sql.exec(`CREATE TABLE ${stage(i)} (pos INTEGER PRIMARY KEY, img TEXT NOT NULL)`);
        }
        node.schema.invalidate();
      }
      const staged: number[] = [];
      for (let i = 0; i < message.tables; i++) {
        const row = sql.exec<{ p: number | null }>(`SELECT max(pos) AS p FROM ${stage(i)}`).one();
        staged.push(Number(row.p ?? 0));
      }
      return { reply: { appliedLsn: 0, staged }, state: { id: message.id, lsn: message.lsn } };
    });
  }
  if (state?.id !== message.id) throw new Error(`snapshot ${message.id} was not begun here`);
  if (message.phase === "rows") {
    storage.transactionSync(() => {
      for (let i = 0; i < message.rows.length; i += ROWS_PER_INSERT) {
        const rows = message.rows.slice(i, i + ROWS_PER_INSERT);
        const values = rows.map(() => "(?, ?)").join(", ");
        const params = rows.flatMap((r) => [r.pos, r.img]);
        run(
          sql,
          `INSERT OR REPLACE INTO ${stage(message.table)} (pos, img) VALUES ${values}`,
          ...params,
        );
      }
    });
    return { reply: { appliedLsn: 0 }, state };
  }
  storage.transactionSync(() => {
    install(node, message);
    onInstall();
  });
  return { reply: { appliedLsn: message.lsn }, state: null, installedLsn: message.lsn };
}

function install(node: SqlNode, message: Extract<SnapshotMessage, { phase: "end" }>): void {
  const sql = node.sql;
  // Rows arrive table by table: foreign keys are checked once, at the commit.
  sql.exec("PRAGMA defer_foreign_keys = ON");
  ensureReplicaFlag(sql);
  dropUserObjects(node);
  // Indexes before rows: a foreign key may name a parent key that only a
  // UNIQUE index makes unique, and SQLite refuses to compile writes to its
  // child until that index exists.
  for (const object of message.objects) {
    if (object.type === "table" || object.type === "index") sql.exec(object.sql);
  }
  node.schema.invalidate();
  // fts5 settings (page size, merging, rank) before its rows go in, as on the master.
  restoreFts5Settings(sql, message.fts5Settings);
  message.tables.forEach((table, i) => {
    const info = node.schema.table(table.name);
    if (info === undefined) throw new Error(`snapshot table ${table.name} was not created`);
    for (let after = 0; ; ) {
      const rows = sql
        .exec<{ pos: number; img: string }>(
          `SELECT pos, img FROM ${stage(i)} WHERE pos > ? ORDER BY pos LIMIT ?`,
          after,
          INSTALL_CHUNK,
        )
        .toArray();
      if (rows.length === 0) break;
      const changes: Change[] = rows.map((r) => ({ t: table.name, op: "I", img: r.img }));
      for (const statement of applyChanges(info, changes)) {
        run(sql, statement.sql, ...statement.params);
      }
      after = rows[rows.length - 1]?.pos ?? after;
    }
  });
  for (const object of message.objects) {
    if (object.type !== "table" && object.type !== "index") sql.exec(object.sql);
  }
  node.schema.invalidate();
  syncCaptureTriggers(sql, node.schema);
  // Inserting the rows counted AUTOINCREMENT up: the master's counters replace
  // them, an emptied sqlite_sequence included.
  if (node.schema.sequenceRoot() !== undefined) restoreSequence(sql, message.sequence);
  dropStages(node);
}
