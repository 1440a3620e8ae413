/**
 * Checks a schema change by what it did to sqlite_schema, compared before and
 * after inside its transaction: it may not create, alter or drop an internal
 * object (capture triggers excepted: the node rebuilds those itself), every
 * trigger it leaves must carry the trigger guard, and every table must be one
 * replication can carry (schema-info.ts).
 */
import { ApiError } from "./errors";
import { isReservedName } from "./reserved-names";
import { CAPTURE_PREFIX } from "./row-capture";
import { type SchemaObject, type TableInfo, unsupportedTable } from "./schema-info";
import { isGuardedTrigger } from "./trigger-guard";

function identity(object: SchemaObject): string {
  return `${object.type}\u001f${object.name}\u001f${object.tblName}\u001f${object.sql ?? ""}`;
}

/**
 * The platform creates its own tables when it needs them (`_cf_KV`,
 * `_cf_METADATA`, and locally Miniflare's `__miniflare_do_name`), which user
 * SQL cannot name (workerd refuses `_cf_`; DDL naming a reserved prefix is
 * refused): their appearance is not the statement's doing.
 */
const PLATFORM_PREFIXES = ["_cf_", "__cf_", "__miniflare_"];

function isPlatform(object: SchemaObject): boolean {
  const name = object.name.toLowerCase();
  return PLATFORM_PREFIXES.some((p) => name.startsWith(p)) && object.tblName === object.name;
}

function isInternal(object: SchemaObject): boolean {
  if (object.type === "trigger" && object.name.startsWith(CAPTURE_PREFIX)) return false;
  if (isPlatform(object)) return false;
  return isReservedName(object.name) || isReservedName(object.tblName);
}

export interface SchemaDiff {
  added: SchemaObject[];
  removed: SchemaObject[];
}

export function diffSchema(
  before: readonly SchemaObject[],
  after: readonly SchemaObject[],
): SchemaDiff {
  const was = new Set(before.map(identity));
  const now = new Set(after.map(identity));
  return {
    added: after.filter((o) => !was.has(identity(o))),
    removed: before.filter((o) => !now.has(identity(o))),
  };
}

/**
 * `tablesBefore`: the tables as they were before the change. A virtual table
 * may claim an existing table as one of its shadows (fts5 `x_docsize` when a
 * user's table already has that name and the module does not create it): the
 * user's table would then be skipped by snapshots and verify, so it is refused.
 */
export function checkSchemaChange(
  diff: SchemaDiff,
  tables: ReadonlyMap<string, TableInfo>,
  tablesBefore: ReadonlyMap<string, TableInfo> = new Map(),
): void {
  for (const [name, was] of tablesBefore) {
    if (was.kind === "shadow" || tables.get(name)?.kind !== "shadow") continue;
    throw new ApiError(
      "INVALID_SQL",
      `this statement makes table ${name} a shadow table of a virtual table: rename ${name} first`,
      { name, construct: "virtual table claiming an existing table" },
    );
  }
  for (const object of [...diff.added, ...diff.removed]) {
    if (isInternal(object)) {
      const name = isReservedName(object.name) ? object.name : object.tblName;
      throw new ApiError("RESERVED_NAME", `"${name}" is an internal name and cannot be used`, {
        name,
      });
    }
  }
  for (const object of diff.added) {
    if (object.type === "trigger" && !isGuardedTrigger(object.sql)) {
      throw new ApiError("INVALID_SQL", `trigger ${object.name} was not created through the guard`);
    }
    if (object.type !== "table") continue;
    const table = tables.get(object.name);
    const problem = table === undefined ? null : unsupportedTable(table, object.sql, tables);
    if (problem !== null) throw problem;
  }
}

/**
 * Tables the change created with a b-tree of their own (CREATE TABLE, and
 * CREATE TABLE ... AS, whose rows ship with it); a renamed or altered table
 * keeps its root page.
 */
export function createdTables(diff: SchemaDiff, before: readonly SchemaObject[]): string[] {
  const roots = new Set(before.map((o) => o.rootpage));
  return diff.added
    .filter((o) => o.type === "table" && o.rootpage > 0 && !roots.has(o.rootpage))
    .map((o) => o.name);
}

/** The tables whose sqlite_schema row the change added, altered or removed. */
export function changedTables(diff: SchemaDiff): string[] {
  const names = new Set<string>();
  for (const object of [...diff.added, ...diff.removed]) {
    if (object.type === "table") names.add(object.name);
  }
  return [...names];
}
