/**
 * The master's local commit of one import batch (docs/operations.md,
 * "Backups and restore"): its statements through the guard as an exec's are,
 * its log record and its saved result, in one synchronous transaction. The
 * first batch is refused, with nothing written, unless the cluster holds no
 * user object.
 *
 * sqlite_sequence is the one thing an import writes that a client may not:
 * a dump restores each AUTOINCREMENT counter exactly (it may be past the
 * largest rowid, after deletes), and the guard refuses every write to sqlite_*
 * objects. So the dump's `DELETE FROM sqlite_sequence` and its `INSERT INTO
 * sqlite_sequence VALUES('t', n)` lines arrive as items of their own, checked
 * (an integer counter, for a table the import created), and written here
 * directly; the commit then counts as one that wrote sqlite_sequence, so its
 * record carries the table to the replicas, as any AUTOINCREMENT insert's does.
 */
import type {
  ImportBatchRequest,
  ImportBatchResponse,
  ImportItem,
} from "../../core/backup-protocol";
import { ApiError } from "../../core/errors";
import type { LogRecord } from "../../core/protocol";
import { RecordBudget } from "../../core/record-budget";
import { isUserName } from "../../core/reserved-names";
import type { NodeStore } from "../node-store";
import { isCaptureTrigger } from "../sqlite/capture";
import { run } from "../sqlite/run";
import type { SqlNode } from "../sqlite/schema";
import { appendCommit } from "./commit";
import { type HeldAt, runItems } from "./import-items";

export interface ImportCommitInput {
  lsn: number;
  term: number;
  logEnd: number;
  key: string;
  requestHash: string;
  statementMinRows: number;
  recordMaxBytes: number;
  first: boolean;
  items: readonly ImportItem[];
  holdable: ImportBatchRequest["holdable"];
  resolve: boolean;
}

export interface ImportCommitted {
  response: ImportBatchResponse;
  record: LogRecord | null;
  bytes: number;
  responseBytes: number;
}

/** User objects the cluster holds: a table, view, index or trigger of the user's. */
export function userObjects(node: SqlNode): string[] {
  return node.schema
    .objects()
    .filter((o) => ["table", "view", "index", "trigger"].includes(o.type))
    .filter((o) => o.sql !== null && isUserName(o.name) && isUserName(o.tblName))
    .filter((o) => !isCaptureTrigger(o.name) && !node.schema.isShadow(o.name))
    .map((o) => o.name);
}

export function commitImport(
  storage: DurableObjectStorage,
  node: SqlNode,
  store: NodeStore,
  input: ImportCommitInput,
): ImportCommitted {
  const ts = Date.now();
  try {
    return storage.transactionSync(() => {
      if (input.first) refuseUnlessEmpty(node);
      const record = new RecordBudget(input.recordMaxBytes);
      const { entries, wroteSequence, held } = runItems(
        storage,
        node,
        {
          items: input.items,
          holdable: new Map(input.holdable.map((h) => [h.item, h.rows])),
          resolve: input.resolve,
          statementMinRows: input.statementMinRows,
          record,
        },
        (item) => writeSequence(node, item),
      );
      // A batch that changed nothing (its rows all held back, DML that matched no row) is a
      // commit all the same, with no entries: its saved result travels with it, so that an
      // import resumed under the same key replays it instead of running it again on a
      // cluster that has moved on.
      if (input.items.length === 0) {
        const response: ImportBatchResponse = { lsn: null, ...withHeld(held) };
        return { response, record: null, bytes: 0, responseBytes: 0 };
      }
      const response: ImportBatchResponse = { lsn: input.lsn, ...withHeld(held) };
      return appendCommit(node, store, input, ts, { entries, wroteSequence, response }, record);
    });
  } catch (error) {
    // A DDL statement that ran before the failure reloaded the cache mid-transaction.
    node.schema.invalidate();
    throw error;
  }
}

function refuseUnlessEmpty(node: SqlNode): void {
  const objects = userObjects(node);
  if (objects.length === 0) return;
  throw new ApiError(
    "NOT_EMPTY",
    `the cluster already holds ${objects.length} user object(s) (${objects.slice(0, 5).join(", ")}): import into a new, empty cluster`,
    { objects: objects.slice(0, 20) },
  );
}

/** The privileged write of sqlite_sequence; whether it wrote anything. */
function writeSequence(node: SqlNode, item: Exclude<ImportItem, { kind: "sql" }>): boolean {
  const exists = node.schema.objects().some((o) => o.name === "sqlite_sequence");
  if (item.kind === "sequence-reset") {
    // No AUTOINCREMENT table yet: there is nothing to empty.
    if (!exists) return false;
    run(node.sql, "DELETE FROM sqlite_sequence");
    return true;
  }
  const table = node.schema.table(item.name);
  if (table === undefined || table.kind !== "table" || !isUserName(item.name)) {
    throw new ApiError(
      "INVALID_SQL",
      `sqlite_sequence names table ${JSON.stringify(item.name)}, which the import did not create`,
    );
  }
  if (!exists) {
    throw new ApiError(
      "INVALID_SQL",
      `sqlite_sequence does not exist: no table the import created uses AUTOINCREMENT (${item.name})`,
    );
  }
  run(
    node.sql,
    "INSERT INTO sqlite_sequence (name, seq) VALUES (?, CAST(? AS INTEGER))",
    item.name,
    item.seq.toString(),
  );
  return true;
}

function withHeld(held: readonly HeldAt[]): Pick<ImportBatchResponse, "held"> {
  return held.length === 0 ? {} : { held: held.map(({ item, row }) => ({ item, row: row ?? 0 })) };
}
