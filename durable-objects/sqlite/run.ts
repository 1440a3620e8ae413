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
