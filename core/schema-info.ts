/**
 * The user schema as SQLite describes it (sqlite_schema, pragma_table_list,
 * pragma_table_xinfo), reduced to what replication needs per table: which
 * columns hold data, and how a row is keyed. Pure: the DO side loads the rows.
 */
import { ApiError } from "./errors";
import { isUserName } from "./reserved-names";
import { quoteIdent, tokenize } from "./sql-lexer";
import { fts5ContentColumns, fts5ContentTable, virtualTableModule } from "./virtual-table-spec";

export interface SchemaObject {
  type: string;
  name: string;
  tblName: string;
  rootpage: number;
  sql: string | null;
}

export type TableKind = "table" | "virtual" | "shadow" | "view";

export type ColumnInfo = {
  name: string;
  /** pragma_table_xinfo.hidden: 0 normal, 1 hidden (virtual tables), 2 virtual generated, 3 stored generated. */
  hidden: number;
  /** Position in the primary key, 1-based; 0 when not part of it. */
  pk: number;
};

export interface TableInfo {
  name: string;
  kind: TableKind;
  withoutRowid: boolean;
  strict: boolean;
  /** Columns that hold written data, in table order (generated and hidden ones left out). */
  columns: string[];
  /**
   * How a row is named: the rowid through an alias SQLite still resolves to it
   * (an INTEGER PRIMARY KEY column, else `rowid`, `oid` or `_rowid_`, whichever no
   * column shadows), or the primary key columns of a WITHOUT ROWID table.
   */
  key:
    | { kind: "rowid"; expr: string; aliasColumn: string | null }
    | { kind: "pk"; columns: string[] };
}

export type TableListRow = {
  name: string;
  type: string;
  wr: number;
  strict: number;
};

const ROWID_NAMES = ["rowid", "oid", "_rowid_"];

/**
 * `aliasColumn`: the column SQLite reads as the rowid (found by the caller from
 * the compiled program: `SELECT col` compiles to a Rowid instruction), if any.
 */
export function tableInfo(
  list: TableListRow,
  xinfo: readonly ColumnInfo[],
  aliasColumn: string | null,
): TableInfo {
  const kind: TableKind =
    list.type === "virtual" || list.type === "shadow" || list.type === "view" ? list.type : "table";
  const withoutRowid = list.wr !== 0;
  const dataColumns = xinfo.filter((c) => c.hidden === 0).map((c) => c.name);
  let key: TableInfo["key"];
  if (withoutRowid) {
    const pk = xinfo.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk);
    key = { kind: "pk", columns: pk.map((c) => c.name) };
  } else if (aliasColumn !== null) {
    key = { kind: "rowid", expr: quoteIdent(aliasColumn), aliasColumn };
  } else {
    const taken = new Set(xinfo.map((c) => c.name.toLowerCase()));
    const free = ROWID_NAMES.find((n) => !taken.has(n));
    key = { kind: "rowid", expr: free ?? "", aliasColumn: null };
  }
  const columns =
    key.kind === "rowid" && key.aliasColumn !== null
      ? dataColumns.filter((c) => c !== key.aliasColumn)
      : dataColumns;
  return { name: list.name, kind, withoutRowid, strict: list.strict !== 0, columns, key };
}

/**
 * Schema constructs replication cannot carry, refused when they are created
 * (the statement rolls back) with the construct named.
 */
export function unsupportedTable(
  table: TableInfo,
  sql: string | null,
  tables: ReadonlyMap<string, TableInfo>,
): ApiError | null {
  if (table.kind === "table" && table.key.kind === "rowid" && table.key.expr === "") {
    return new ApiError(
      "INVALID_SQL",
      `table ${table.name} has columns named rowid, oid and _rowid_ and no INTEGER PRIMARY KEY: ` +
        "its rows could not be told apart on the replicas; rename one of those columns",
      { name: table.name, construct: "rowid-shadowing columns" },
    );
  }
  if (table.kind === "table" && hasDeferredForeignKey(sql ?? "")) {
    return new ApiError(
      "INVALID_SQL",
      `table ${table.name} has a foreign key DEFERRABLE INITIALLY DEFERRED: Durable Object ` +
        "SQLite checks such a key only when the platform commits, where a violation resets " +
        "the object instead of failing the request; declare the key without it (immediate)",
      { name: table.name, construct: "DEFERRABLE INITIALLY DEFERRED foreign key" },
    );
  }
  if (table.kind === "virtual") {
    const module = virtualTableModule(sql ?? "");
    if (module !== "fts5") {
      return new ApiError(
        "INVALID_SQL",
        `virtual table ${table.name} uses module ${module ?? "?"}: only fts5 virtual tables are replicated`,
        { name: table.name, construct: `virtual table module ${module ?? "?"}` },
      );
    }
    const content = tables.get(fts5ContentTable(table.name));
    const stored = content?.kind === "shadow" ? content.columns.filter((c) => c !== "id") : [];
    if (stored.join(",") !== fts5ContentColumns(table.columns.length).join(",")) {
      return new ApiError(
        "INVALID_SQL",
        `fts5 table ${table.name} does not store its own rows (content=... or contentless): a ` +
          "rebuilt replica could not make the same index from them; use an fts5 table that " +
          "keeps its content (no content= option) and fill it from your table with triggers",
        { name: table.name, construct: "fts5 without its own content" },
      );
    }
  }
  return null;
}

/** `DEFERRABLE INITIALLY DEFERRED` (not after NOT): SQLite's one deferred foreign key. */
function hasDeferredForeignKey(sql: string): boolean {
  const words = tokenize(sql).map((t) => (t.type === "word" ? t.value.toUpperCase() : ""));
  return words.some(
    (word, i) =>
      word === "DEFERRED" &&
      words[i - 1] === "INITIALLY" &&
      words[i - 2] === "DEFERRABLE" &&
      words[i - 3] !== "NOT",
  );
}

/**
 * The names of a row's key cells, unquoted: the rowid under its alias column,
 * else the first of rowid, oid, _rowid_ no column has taken; or the primary key.
 */
export function keyColumnNames(table: TableInfo): string[] {
  return table.key.kind === "rowid" ? [table.key.aliasColumn ?? table.key.expr] : table.key.columns;
}

/** The names of a row image's cells, unquoted, in imageSqlColumns' order. */
export function imageColumnNames(table: TableInfo): string[] {
  return table.key.kind === "rowid" ? [...keyColumnNames(table), ...table.columns] : table.columns;
}

/** What names a row in SQL: the rowid's expression, or the primary key's columns, quoted. */
export function keySqlColumns(table: TableInfo): string[] {
  return table.key.kind === "rowid" ? [table.key.expr] : table.key.columns.map(quoteIdent);
}

/**
 * A row's image in SQL, as capture, apply, snapshots and verify read and write
 * it: the rowid first for rowid tables, then the data columns, quoted.
 */
export function imageSqlColumns(table: TableInfo): string[] {
  const data = table.columns.map(quoteIdent);
  return table.key.kind === "rowid" ? [table.key.expr, ...data] : data;
}

/** Tables whose rows replication captures: the user's ordinary tables. */
export function isCapturedTable(table: TableInfo): boolean {
  return table.kind === "table" && isUserName(table.name);
}
