/**
 * What the guard allows, decided on the facts SQLite's compiled program gives
 * (sql-program.ts) and the schema that maps its root pages to objects.
 *
 * - No user statement opens an internal object (`_repl_*`, `_cf_*`), in its main
 *   program or in any trigger it fires; the only internal b-trees a subprogram
 *   may open are row capture's buffer (written by the capture triggers) and the
 *   flag the trigger guard reads.
 * - No user statement opens a virtual table's shadow tables directly: their
 *   layout is the module's and differs on a rebuilt replica.
 * - A query compiles to a read (no write transaction).
 * - A write is replicated as the rows it changed, except a statement that
 *   writes a virtual table (fts5: its writes reach no trigger), which replicas
 *   run themselves: it must call only deterministic functions and not read the
 *   schema table, whose rows (root pages) differ from node to node.
 */
import { ApiError } from "./errors";
import { isReservedName } from "./reserved-names";
import { CHANGES_TABLE } from "./row-capture";
import type { SchemaObject } from "./schema-info";
import { type ProgramFacts, nonDeterministicCalls } from "./sql-program";
import { APPLYING_TABLE } from "./trigger-guard";

export interface RootLookup {
  /** The object whose b-tree has this root page (root 1 is sqlite_schema). */
  objectAt(root: number): SchemaObject | undefined;
  /** Whether the table is a virtual table's shadow table. */
  isShadow(name: string): boolean;
}

/**
 * How a write travels: `rows` as the rows it changed, `ddl` as its text (plus
 * any rows it changed), `sql` as its text for replicas to run, `read` not at all.
 */
export type WriteKind = "read" | "rows" | "ddl" | "sql";

export const SCHEMA_ROOT = 1;

const SUBPROGRAM_INTERNAL_WRITES = new Set([CHANGES_TABLE]);
const SUBPROGRAM_INTERNAL_READS = new Set([APPLYING_TABLE]);

function reservedName(name: string): ApiError {
  return new ApiError("RESERVED_NAME", `"${name}" is an internal name and cannot be used`, {
    name,
  });
}

function checkRoot(root: number, lookup: RootLookup, allowed: ReadonlySet<string>): void {
  if (root === SCHEMA_ROOT) return;
  const object = lookup.objectAt(root);
  if (object === undefined) {
    throw new ApiError("INVALID_SQL", `the statement opens b-tree ${root}, which no object owns`);
  }
  for (const name of [object.name, object.tblName]) {
    if (isReservedName(name) && !allowed.has(name)) throw reservedName(name);
  }
  if (lookup.isShadow(object.tblName)) {
    throw new ApiError(
      "INVALID_SQL",
      `${object.tblName} is a shadow table of a virtual table: query the virtual table instead`,
      { name: object.tblName },
    );
  }
}

/** Refuses a statement that touches internal objects or shadow tables. */
export function checkTouched(facts: ProgramFacts, lookup: RootLookup): void {
  if (facts.otherDatabase) {
    throw new ApiError("INVALID_SQL", "only the main database is available (no TEMP or attached)");
  }
  if (facts.mayRollBack) {
    // SQLite's ROLLBACK would end the transaction the commit (or the read) runs in.
    throw new ApiError(
      "INVALID_SQL",
      "ROLLBACK conflict resolution (OR ROLLBACK, ON CONFLICT ROLLBACK, RAISE(ROLLBACK, …)) is not " +
        "supported: every request is already one transaction and an error rolls it back; use " +
        "ABORT (the default) or FAIL",
      { construct: "rollback conflict resolution" },
    );
  }
  const none = new Set<string>();
  for (const root of facts.rootsRead) checkRoot(root, lookup, none);
  for (const root of facts.rootsWritten) checkRoot(root, lookup, none);
  for (const root of facts.subRootsRead) checkRoot(root, lookup, SUBPROGRAM_INTERNAL_READS);
  for (const root of facts.subRootsWritten) checkRoot(root, lookup, SUBPROGRAM_INTERNAL_WRITES);
}

export function classifyWrite(facts: ProgramFacts): WriteKind {
  if (facts.changesSchema) return "ddl";
  if (facts.writesVirtualTable) return "sql";
  return facts.writes ? "rows" : "read";
}

/** Whether replicas running this statement themselves would compute what the master did. */
export function isReplayable(facts: ProgramFacts, node: ReplayContext = {}): boolean {
  try {
    checkReplayable(facts, node);
    return true;
  } catch {
    return false;
  }
}

/** What the replay rules need to know of the node's schema. */
export interface ReplayContext {
  /** The virtual tables a replayed statement may read (names in programs); none when absent. */
  virtualTables?: () => ReadonlySet<string>;
  /** sqlite_sequence's root page, when it exists. */
  sequenceRoot?: number | undefined;
}

/**
 * For a statement replicas will run themselves (`sql`): it must compute the
 * same everywhere. It calls only deterministic functions, does not read the
 * schema table (its root pages differ from node to node) nor sqlite_sequence
 * (a record restores the AUTOINCREMENT counters after its last statement, so
 * a replica replaying one mid-record would read earlier counters than the
 * master did), and reads only the virtual tables the context gives:
 * pragma_table_list and its kind describe the node, not the data.
 */
export function checkReplayable(facts: ProgramFacts, node: ReplayContext = {}): void {
  const calls = nonDeterministicCalls(facts);
  if (calls.length > 0) {
    const construct = `${calls.map((c) => `${c}()`).join(", ")} in a write to a virtual table`;
    throw new ApiError(
      "NON_DETERMINISTIC",
      `${construct} is not allowed: a write to a virtual table (fts5) is replayed as a statement ` +
        "on every replica, so it may call only deterministic functions; compute the value first " +
        "and pass it as a parameter",
      { construct, functions: calls },
    );
  }
  const readsSchema = facts.rootsRead.has(SCHEMA_ROOT) || facts.subRootsRead.has(SCHEMA_ROOT);
  if (readsSchema) {
    const construct = "sqlite_schema in a write to a virtual table";
    throw new ApiError(
      "NON_DETERMINISTIC",
      `${construct} is not allowed: the schema table's rows (root pages) differ between nodes`,
      { construct },
    );
  }
  const sequence = node.sequenceRoot;
  if (
    sequence !== undefined &&
    (facts.rootsRead.has(sequence) || facts.subRootsRead.has(sequence))
  ) {
    const construct = "sqlite_sequence in a write to a virtual table";
    throw new ApiError(
      "NON_DETERMINISTIC",
      `${construct} is not allowed: a write to a virtual table (fts5) is replayed as a ` +
        "statement on every replica, which restore the AUTOINCREMENT counters only at the end " +
        "of a request; read the counter first and pass it as a parameter",
      { construct },
    );
  }
  if (facts.virtualTablesRead.size === 0) return;
  const allowed = node.virtualTables?.() ?? new Set<string>();
  if ([...facts.virtualTablesRead].every((handle) => allowed.has(handle))) return;
  const construct = "a table-valued function that describes the node in a write to a virtual table";
  throw new ApiError(
    "NON_DETERMINISTIC",
    `${construct} is not allowed: a write to a virtual table (fts5) is replayed as a statement ` +
      "on every replica, and pragma_* functions answer differently on each node; it may read " +
      "tables, the user's virtual tables, json_each and json_tree",
    { construct },
  );
}

export function checkQuery(facts: ProgramFacts): void {
  if (facts.writes) {
    throw new ApiError(
      "INVALID_SQL",
      "query accepts only reads: SQLite compiles this statement as a write; send writes to exec",
      { compiledAs: "write" },
    );
  }
}
