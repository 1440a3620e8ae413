/**
 * What an export needs to know of the tables besides their rows, asked of
 * SQLite inside the snapshot's transaction so it describes the schema at the
 * snapshot's LSN: which tables each one's foreign keys name (a dump loads
 * those first, since Durable Object SQLite enforces foreign keys on every
 * row), and which UNIQUE indexes serve as a foreign key's parent key (SQLite
 * refuses writes to the child table until they exist, so a dump creates them
 * before any row rather than after, where `.dump` puts indexes).
 */
import { asciiLower } from "../../core/sql-lexer";
import type { SqlNode } from "./schema";

export interface TableLayout {
  parents: string[];
  parentKeys: string[];
}

/** Each named table's layout, in the order given. */
export function tableLayouts(node: SqlNode, names: readonly string[]): TableLayout[] {
  const parents = names.map((name) => foreignKeyParents(node, name));
  const referenced = new Set(parents.flat().map(asciiLower));
  return names.map((name, i) => ({
    parents: parents[i] ?? [],
    parentKeys: referenced.has(asciiLower(name)) ? uniqueIndexes(node, name) : [],
  }));
}

function foreignKeyParents(node: SqlNode, table: string): string[] {
  if (node.schema.table(table)?.kind !== "table") return [];
  return node.sql
    .exec<{ parent: string }>(
      'SELECT DISTINCT "table" AS parent FROM pragma_foreign_key_list(?)',
      table,
    )
    .toArray()
    .map((row) => row.parent);
}

/** Indexes made by CREATE UNIQUE INDEX (origin 'c'); UNIQUE constraints come with the table. */
function uniqueIndexes(node: SqlNode, table: string): string[] {
  return node.sql
    .exec<{ name: string }>(
      `SELECT name FROM pragma_index_list(?) WHERE "unique" = 1 AND origin = 'c' ORDER BY name`,
      table,
    )
    .toArray()
    .map((row) => row.name);
}
