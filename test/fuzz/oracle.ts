/**
 * An independent judge of one statement, run on a scratch node holding the
 * fuzz schema: SQLite itself, given the client's raw text and parameters, in
 * a transaction that is always rolled back. It says whether SQLite would run
 * more than one statement, which internal b-trees the first one's program
 * opens, and whether it writes.
 */
import { isReservedName } from "../../core/reserved-names";

export interface Verdict {
  /** SQLite would run more than this one statement. */
  multiple: boolean;
  /** Internal objects the program opens (in any subprogram). */
  internal: string[];
  /** The program opens a write transaction. */
  writes: boolean;
  /** SQLite could not compile it. */
  error: string | null;
}

const EXPLAIN_COLUMNS = ["addr", "opcode", "p1", "p2", "p3", "p4", "p5", "comment"];
const OPENS = new Set(["OpenRead", "OpenWrite", "ReopenIdx"]);

class Rollback extends Error {}

export function judge(storage: DurableObjectStorage, sql: string, params: unknown[]): Verdict {
  const verdict: Verdict = { multiple: false, internal: [], writes: false, error: null };
  try {
    storage.transactionSync(() => {
      const db = storage.sql;
      const names = new Map<number, string[]>();
      for (const row of db.exec<{ name: string; tbl_name: string; rootpage: number }>(
        "SELECT name, tbl_name, rootpage FROM sqlite_master",
      )) {
        names.set(Number(row.rootpage), [row.name, row.tbl_name]);
      }
      const before = db.exec<{ n: number }>("SELECT total_changes() AS n").one().n;
      const cursor = db.exec(`EXPLAIN ${sql}`, ...(params as SqlStorageValue[]));
      const rows = [...cursor.raw()];
      const after = db.exec<{ n: number }>("SELECT total_changes() AS n").one().n;
      // A second statement ran if its rows, not EXPLAIN's, came back, or if it changed rows.
      verdict.multiple = cursor.columnNames.join() !== EXPLAIN_COLUMNS.join() || after !== before;
      if (!verdict.multiple) {
        for (const row of rows) {
          const opcode = String(row[1]);
          if (opcode === "Transaction" && Number(row[3]) !== 0) verdict.writes = true;
          if (!OPENS.has(opcode)) continue;
          for (const name of names.get(Number(row[3])) ?? []) {
            if (isReservedName(name)) verdict.internal.push(name);
          }
        }
      }
      throw new Rollback();
    });
  } catch (error) {
    if (!(error instanceof Rollback)) {
      const message = error instanceof Error ? error.message : String(error);
      if (/only the last statement can have parameters/.test(message)) verdict.multiple = true;
      else verdict.error = message;
    }
  }
  return verdict;
}
