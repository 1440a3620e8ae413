/**
 * What an import's statement may do, on SQLite's own terms (docs/operations.md,
 * "Import"): whether SQLite's refusal of a row means it waits for a parent
 * row still to come, what in the schema makes the order of rows visible (so
 * that a row may not wait), and which of a dump's statements would run a
 * foreign-key action that sqlite3, loading the same dump, would not.
 */
import type { ImportItem } from "../../core/backup-protocol";
import { ApiError } from "../../core/errors";
import { insertTarget, type OrderWitnesses } from "../../core/held-rows";
import { isUserName } from "../../core/reserved-names";
import { asciiLower, tokenize } from "../../core/sql-lexer";
import { isForeignKeyError } from "../sqlite/apply";
import { isCaptureTrigger } from "../sqlite/capture";
import { compile } from "../sqlite/compile";
import type { SqlNode } from "../sqlite/schema";
import { prepare } from "../sqlite/write";

/**
 * Whether SQLite refused a row for a parent it does not hold yet: a missing
 * parent row, a missing parent table (`sqlite3 .dump` creates each table of
 * a cycle just before its rows), or a parent key not yet unique (`sqlite3
 * .dump` creates a UNIQUE index after every table's rows: "foreign key
 * mismatch"). Holding a row wrongly only delays its error: every row held
 * goes again before the import ends.
 */
export function waitsForParent(node: SqlNode, error: unknown): boolean {
  if (isForeignKeyError(error)) return true;
  const message = error instanceof Error ? error.message : "";
  if (/^(Error: )?foreign key mismatch - /.test(message)) return true;
  const missing = /no such table: main\.(.+?)(?:: SQLITE_ERROR|$)/.exec(message)?.[1];
  if (missing === undefined) return false;
  return node.schema.foreignKeyTables().has(asciiLower(missing));
}

function hasUserTriggers(node: SqlNode): boolean {
  return node.schema
    .objects()
    .some((o) => o.type === "trigger" && isUserName(o.name) && !isCaptureTrigger(o.name));
}

/**
 * A dump's statement that may run a foreign key's ON DELETE / ON UPDATE
 * action: one that deletes, updates or replaces rows (anything but a plain
 * INSERT) of a table a foreign key with an action names as its parent, as
 * SQLite's compiled program says it writes. sqlite3 loads the dump with
 * foreign keys off and runs no action; Durable Object SQLite always does, so
 * the cluster would not hold what the dump holds.
 */
export function refuseForeignKeyActions(
  node: SqlNode,
  item: Extract<ImportItem, { kind: "sql" }>,
  index: number,
): void {
  const words = tokenize(item.sql).map((t) => (t.type === "word" ? t.value.toUpperCase() : ""));
  const upsert = words.some((w, i) => w === "DO" && words[i + 1] === "UPDATE");
  if (words[0] === "INSERT" && !words.includes("REPLACE") && !upsert) return;
  const parents = parentsWithActions(node);
  if (parents.size === 0) return;
  let written: ReadonlySet<number>;
  try {
    written = compile(node, prepare(item.sql, item.params)).rootsWritten;
  } catch {
    return; // runWrite meets the same error and reports it.
  }
  const hit = node.schema
    .objects()
    .find((o) => o.type === "table" && written.has(o.rootpage) && parents.has(asciiLower(o.name)));
  if (hit === undefined) return;
  throw new ApiError(
    "INVALID_SQL",
    `this statement writes ${hit.name}, whose rows a foreign key's ON DELETE or ON UPDATE ` +
      "action follows: sqlite3 runs no action when it loads the dump (its PRAGMA " +
      "foreign_keys=OFF) and Durable Object SQLite always does, so the cluster would not " +
      "hold what the dump holds",
    { construct: "foreign key action in a dump", name: hit.name, item: index },
  );
}

/** Tables (ASCII-lowercased) a foreign key with an ON DELETE or ON UPDATE action names. */
function parentsWithActions(node: SqlNode): Set<string> {
  const acts = (action: string) => action !== "NO ACTION" && action !== "RESTRICT";
  return new Set(
    node.schema
      .foreignKeys()
      .filter((key) => acts(key.onUpdate) || acts(key.onDelete))
      .map((key) => asciiLower(key.parent)),
  );
}

export function orderWitnesses(node: SqlNode, item: ImportItem): OrderWitnesses {
  const triggers = hasUserTriggers(node);
  const objects = node.schema.objects();
  const target = item.kind === "sql" ? insertTarget(item.sql) : null;
  const name = target === null ? null : asciiLower(target);
  const table = objects.find((o) => o.type === "table" && asciiLower(o.name) === name);
  return { triggers, tableSql: table?.sql ?? null };
}

/** SQLite's refusal of a row that may not wait, saying why it may not. */
export function mustKeepOrder(error: unknown, why: string): unknown {
  if (!(error instanceof ApiError)) return error;
  return new ApiError(
    error.code,
    `${error.message}; its parent may come later in the dump, but this row cannot wait for ` +
      `it: ${why}. Order the dump's rows so that parent rows come first`,
    error.details,
    error,
  );
}
