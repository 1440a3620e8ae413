/**
 * Versioned set-up of each object's internal state, applied at start-up,
 * one transaction per step, behind a version number kept in KV (`m:migration`).
 *
 * Internal state lives in the synchronous KV API, out of reach of SQL. What
 * must be SQL stays in two small tables, which the guard keeps user SQL out of:
 * row capture's buffer (`_repl_changes`, empty between transactions) and the
 * trigger guard's flag (`_repl_applying`: empty on a master; on a replica it holds the
 * flag's standing state, capture and user triggers off, between batches).
 */
import { CHANGES_TABLE } from "../core/row-capture";
import { APPLYING_TABLE } from "../core/trigger-guard";

export interface Migration {
  version: number;
  description: string;
  apply(storage: DurableObjectStorage): void;
}

function tableExists(sql: SqlStorage, name: string): boolean {
  return (
    sql.exec("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", name).toArray()
      .length > 0
  );
}

const captureTables: Migration = {
  version: 2,
  description: "row capture buffer and trigger guard flag",
  apply(storage) {
    storage.sql.exec(
      `CREATE TABLE IF NOT EXISTS ${CHANGES_TABLE} (seq INTEGER PRIMARY KEY, tbl TEXT NOT NULL, op TEXT NOT NULL, ok TEXT, nk TEXT, img TEXT)`,
    );
    storage.sql.exec(`CREATE TABLE IF NOT EXISTS ${APPLYING_TABLE} (x)`);
  },
};

/**
 * Version 1 kept internal state in `_repl_*` SQL tables. Its log held
 * statements, which this version cannot replay, so the log restarts after
 * the last LSN (a replica that lacks it is rebuilt from a snapshot).
 */
const fromSqlTables: Migration = {
  version: 3,
  description: "internal state moves from _repl_* SQL tables to KV",
  apply(storage) {
    const { sql, kv } = storage;
    if (tableExists(sql, "_repl_meta")) {
      for (const row of sql.exec<{ key: string; value: string }>(
        "SELECT key, value FROM _repl_meta",
      )) {
        kv.put(`m:${row.key}`, row.value);
      }
    }
    if (tableExists(sql, "_repl_log")) {
      const last = sql
        .exec<{ lsn: number | null; end: number | null }>(
          "SELECT lsn, end_offset AS end FROM _repl_log ORDER BY lsn DESC LIMIT 1",
        )
        .toArray()[0];
      if (last?.lsn != null) {
        kv.put("m:truncated_through", String(last.lsn));
        kv.put("m:truncated_offset", String(last.end ?? 0));
      }
    }
    if (tableExists(sql, "_repl_tunables")) {
      for (const row of sql.exec<{ name: string; value: string }>(
        "SELECT name, value FROM _repl_tunables",
      )) {
        kv.put(`t:${row.name}`, row.value);
      }
    }
    if (tableExists(sql, "_repl_replicas")) {
      for (const row of sql.exec<{ id: string; state: string; reason: string | null }>(
        "SELECT id, state, reason FROM _repl_replicas",
      )) {
        kv.put(`s:${row.id}`, { state: row.state, reason: row.reason });
      }
    }
    for (const table of [
      "_repl_log",
      "_repl_results",
      "_repl_tunables",
      "_repl_replicas",
      "_repl_meta",
      "_repl_schema_version",
    ]) {
      if (tableExists(sql, table)) sql.exec(`DROP TABLE "${table}"`);
    }
  },
};

/** Master and replica share one layout: every node can hold either role's state. */
export const MIGRATIONS: readonly Migration[] = [captureTables, fromSqlTables];

/** Applies pending migrations; returns the version now in force. */
export function migrate(storage: DurableObjectStorage, migrations = MIGRATIONS): number {
  let current = Number(storage.kv.get<string>("m:migration") ?? 0);
  for (const migration of migrations) {
    if (migration.version <= current) continue;
    storage.transactionSync(() => {
      migration.apply(storage);
      storage.kv.put("m:migration", String(migration.version));
    });
    current = migration.version;
  }
  return current;
}
