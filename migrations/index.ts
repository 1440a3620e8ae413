/**
 * Versioned SQL for the internal tables. Each object applies, at start-up and
 * inside one transaction per step, every migration newer than the version row
 * it finds. Internal names start with `_repl_`, which user SQL may not touch.
 */
export interface Migration {
  version: number;
  description: string;
  sql: string;
}

export const MASTER_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "log, request results (blkseq), tunables, replica states, metadata",
    sql: `
      CREATE TABLE _repl_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE _repl_log (
        lsn INTEGER PRIMARY KEY,
        term INTEGER NOT NULL,
        ts INTEGER NOT NULL,
        body TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        -- Bytes of log through this record: a byte position, like a WAL offset.
        end_offset INTEGER NOT NULL
      );
      CREATE TABLE _repl_results (
        key TEXT PRIMARY KEY,
        request_hash TEXT NOT NULL,
        lsn INTEGER NOT NULL,
        response TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX _repl_results_by_age ON _repl_results (created_at);
      CREATE TABLE _repl_tunables (name TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE _repl_replicas (
        id TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        reason TEXT
      );
    `,
  },
];

export const REPLICA_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "applied LSN, identity and fault flags",
    sql: `CREATE TABLE _repl_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);`,
  },
];

/** Applies pending migrations; returns the version now in force. */
export function migrate(storage: DurableObjectStorage, migrations: readonly Migration[]): number {
  const sql = storage.sql;
  sql.exec(
    "CREATE TABLE IF NOT EXISTS _repl_schema_version (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)",
  );
  const row = sql
    .exec<{ v: number | null }>("SELECT MAX(version) AS v FROM _repl_schema_version")
    .one();
  let current = row.v ?? 0;
  for (const migration of migrations) {
    if (migration.version <= current) continue;
    storage.transactionSync(() => {
      sql.exec(migration.sql);
      sql.exec(
        "INSERT INTO _repl_schema_version (version, applied_at) VALUES (?, ?)",
        migration.version,
        Date.now(),
      );
    });
    current = migration.version;
  }
  return current;
}
