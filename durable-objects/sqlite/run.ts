/**
 * Runs a statement and reads its cursor to the end. workerd keeps a compiled
 * statement in its cache for reuse only once the cursor that used it is
 * finished: a cursor left unread (a DML's, say) holds it until collected, and
 * the next run of the same text compiles it again, capture triggers and all.
 */
export function run(sql: SqlStorage, text: string, ...params: SqlStorageValue[]): void {
  for (const _ of sql.exec(text, ...params).raw()) {
    // Read through: a statement returning rows (RETURNING) must finish too.
  }
}

/**
 * Hands each row of `rows` (a cursor's) to `take`; if `take` throws (a budget
 * refused the result), the rest is still read, unseen, and the error thrown
 * after. A statement left open keeps SQLite from dropping any table on the
 * node (SQLITE_LOCKED) until the cursor is collected, and a rollback does not
 * close it.
 */
export function eachRowToEnd<R>(rows: Iterable<R>, take: (row: R) => void): void {
  let refused: { error: unknown } | null = null;
  for (const row of rows) {
    if (refused !== null) continue;
    try {
      take(row);
    } catch (error) {
      refused = { error };
    }
  }
  if (refused !== null) throw refused.error;
}
