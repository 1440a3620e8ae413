/**
 * One node's schema as SQLite reports it, cached until the node changes it
 * (DDL, a snapshot install): objects by root page for the guard, and each
 * table's data columns and key for row capture and apply.
 */
import { isUserName } from "../../core/reserved-names";
import {
  type ColumnInfo,
  type SchemaObject,
  type TableInfo,
  type TableListRow,
  tableInfo,
} from "../../core/schema-info";
import { asciiLower, quoteIdent } from "../../core/sql-lexer";
import type { RootLookup } from "../../core/sql-policy";
import type { ProgramFacts } from "../../core/sql-program";

interface Loaded {
  sequenceRoot: number | undefined;
  objects: SchemaObject[];
  byRoot: Map<number, SchemaObject>;
  tables: Map<string, TableInfo>;
  shadows: Set<string>;
}

const JSON_TABLE_FUNCTIONS = ["json_each", "json_tree"];

/** Statements whose program facts are kept; past it the oldest go. */
const FACTS_KEPT = 512;

/** A foreign key's column of a child table: the table it names and its actions. */
export interface ForeignKey {
  child: string;
  parent: string;
  onUpdate: string;
  onDelete: string;
}

/** One node's SQLite and what it knows of its schema: what every SQL step works on. */
export interface SqlNode {
  sql: SqlStorage;
  schema: Schema;
}

/**
 * What one table's definition gave, kept across loads while its CREATE text,
 * type and flags stay the same: columns, key and foreign keys follow from those
 * alone. Without it every DDL statement asked SQLite about every table again,
 * and 64 CREATE TABLEs beside 1,000 tables took 20 s instead of 20 ms.
 */
interface TableMemo {
  key: string;
  info: TableInfo;
  foreignKeys: ForeignKey[] | null;
}

export class Schema implements RootLookup {
  private loaded: Loaded | null = null;
  private readonly memo = new Map<string, TableMemo>();
  /** What SQLite compiled each statement text to, on this schema (write.ts compile). */
  private readonly compiled = new Map<string, ProgramFacts>();
  /** The result column names SQLite gives each statement text, on this schema (read.ts). */
  private readonly named = new Map<string, string[]>();

  constructor(private readonly sql: SqlStorage) {}

  /** The schema changed (or may have): load it again when next asked. */
  invalidate(): void {
    this.loaded = null;
    this.compiled.clear();
    this.named.clear();
    this.replayable = null;
    this.keys = null;
    this.related = null;
  }

  private replayable: Set<string> | null = null;
  private keys: ForeignKey[] | null = null;
  private related: Set<string> | null = null;

  /** Every foreign key of the user's tables, as pragma_foreign_key_list gives it (one per column). */
  foreignKeys(): readonly ForeignKey[] {
    if (this.keys !== null) return this.keys;
    const keys: ForeignKey[] = [];
    for (const table of this.tables().values()) {
      if (table.kind !== "table") continue;
      const memo = this.memo.get(table.name);
      const own = memo?.foreignKeys ?? this.foreignKeysOf(table.name);
      if (memo !== undefined) memo.foreignKeys = own;
      keys.push(...own);
    }
    this.keys = keys;
    return keys;
  }

  private foreignKeysOf(child: string): ForeignKey[] {
    const keys: ForeignKey[] = [];
    for (const key of this.sql.exec<{ parent: string; onUpdate: string; onDelete: string }>(
      'SELECT "table" AS parent, on_update AS onUpdate, on_delete AS onDelete FROM pragma_foreign_key_list(?)',
      child,
    )) {
      keys.push({ child, ...key });
    }
    return keys;
  }

  /**
   * Tables a foreign key joins, on either end (names ASCII-lowercased): applying a row there can make
   * SQLite act on other rows (cascades), so a replica checks such rows by
   * capturing what it did (apply.ts).
   */
  foreignKeyTables(): ReadonlySet<string> {
    if (this.related !== null) return this.related;
    const related = new Set<string>();
    // Names compare as SQLite compares them (ASCII case folded).
    for (const key of this.foreignKeys()) {
      related.add(asciiLower(key.child));
      related.add(asciiLower(key.parent));
    }
    this.related = related;
    return related;
  }

  /** Whether any of these changes is to a row of a table a foreign key joins. */
  touchesForeignKeys(changes: readonly { t: string }[]): boolean {
    const related = this.foreignKeyTables();
    if (related.size === 0) return false;
    return changes.some((change) => related.has(asciiLower(change.t)));
  }

  /**
   * The virtual tables a statement replicas run themselves may read, as
   * programs name them (ProgramFacts.virtualTablesRead): the user's virtual
   * tables, whose rows are the same on every node, and json_each / json_tree,
   * which read only their arguments. Not pragma_* and the like: they describe
   * the node. Learnt by compiling a read of each; kept as long as the facts of
   * compiled statements are.
   */
  replayableVirtualTables(): ReadonlySet<string> {
    if (this.replayable !== null) return this.replayable;
    const sources = [
      ...[...this.tables().values()]
        .filter((t) => t.kind === "virtual")
        .map((t) => quoteIdent(t.name)),
      ...JSON_TABLE_FUNCTIONS.map((name) => `${name}('[]')`),
    ];
    const handles = new Set<string>();
    for (const source of sources) {
      for (const row of this.sql.exec(`EXPLAIN SELECT 1 FROM ${source}`).raw()) {
        if (row[1] === "VOpen") handles.add(String(row[5]));
      }
    }
    this.replayable = handles;
    return handles;
  }

  facts(sql: string): ProgramFacts | undefined {
    return this.compiled.get(sql);
  }

  rememberFacts(sql: string, facts: ProgramFacts): void {
    if (this.compiled.size >= FACTS_KEPT) {
      const oldest = this.compiled.keys().next();
      if (!oldest.done) this.compiled.delete(oldest.value);
    }
    this.compiled.set(sql, facts);
  }

  names(sql: string): string[] | undefined {
    return this.named.get(sql);
  }

  rememberNames(sql: string, names: string[]): void {
    if (this.named.size >= FACTS_KEPT) {
      const oldest = this.named.keys().next();
      if (!oldest.done) this.named.delete(oldest.value);
    }
    this.named.set(sql, names);
  }

  /** The root page of sqlite_sequence, once an AUTOINCREMENT table made it. */
  sequenceRoot(): number | undefined {
    return this.load().sequenceRoot;
  }

  private load(): Loaded {
    if (this.loaded !== null) return this.loaded;
    const objects = this.sql
      .exec<{ type: string; name: string; tbl_name: string; rootpage: number; sql: string | null }>(
        "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_schema ORDER BY rowid",
      )
      .toArray()
      .map((r) => ({
        type: r.type,
        name: r.name,
        tblName: r.tbl_name,
        rootpage: Number(r.rootpage ?? 0),
        sql: r.sql,
      }));
    const byRoot = new Map<number, SchemaObject>();
    for (const object of objects) if (object.rootpage > 0) byRoot.set(object.rootpage, object);
    const tables = new Map<string, TableInfo>();
    const shadows = new Set<string>();
    const definitions = new Map<string, string>();
    for (const object of objects) {
      if (object.type === "table" && object.sql !== null) definitions.set(object.name, object.sql);
    }
    for (const list of this.sql
      .exec<TableListRow & { schema: string }>(
        "SELECT schema, name, type, wr, strict FROM pragma_table_list WHERE schema = 'main'",
      )
      .toArray()) {
      if (list.type === "shadow") shadows.add(list.name);
      if (!isUserName(list.name)) continue;
      const definition = definitions.get(list.name);
      // A view's columns follow the tables it reads, not its own text: never kept.
      const key =
        list.type === "view" || definition === undefined
          ? null
          : `${list.type}|${list.wr}|${list.strict}|${definition}`;
      const kept = key === null ? undefined : this.memo.get(list.name);
      if (kept !== undefined && kept.key === key) {
        tables.set(list.name, kept.info);
        continue;
      }
      const columns = this.sql
        .exec<ColumnInfo>(
          "SELECT name, hidden, pk FROM pragma_table_xinfo(?) ORDER BY cid",
          list.name,
        )
        .toArray()
        .map((c) => ({ name: c.name, hidden: Number(c.hidden), pk: Number(c.pk) }));
      const info = tableInfo(list, columns, this.rowidAlias(list, columns));
      tables.set(list.name, info);
      if (key === null) this.memo.delete(list.name);
      else this.memo.set(list.name, { key, info, foreignKeys: null });
    }
    for (const name of this.memo.keys()) if (!tables.has(name)) this.memo.delete(name);
    const sequenceRoot = objects.find((o) => o.name === "sqlite_sequence")?.rootpage;
    this.loaded = { sequenceRoot, objects, byRoot, tables, shadows };
    return this.loaded;
  }

  /**
   * The column SQLite reads as the rowid, if any: an INTEGER PRIMARY KEY (but
   * not `INTEGER PRIMARY KEY DESC`, which is an ordinary column). Asked of
   * SQLite itself: selecting the alias compiles to a Rowid instruction. NOT
   * INDEXED keeps the planner out of it: an index covers the rowid, and a scan
   * of one compiles to IdxRowid, so with an index on another column the same
   * table read as having no alias, and nodes that read it before and after
   * that index named its rows differently.
   */
  private rowidAlias(list: TableListRow, columns: readonly ColumnInfo[]): string | null {
    if (list.wr !== 0 || list.type !== "table") return null;
    const pk = columns.filter((c) => c.pk > 0);
    const only = pk.length === 1 ? pk[0] : undefined;
    if (only === undefined) return null;
    const program = this.sql
      .exec(`EXPLAIN SELECT ${quoteIdent(only.name)} FROM ${quoteIdent(list.name)} NOT INDEXED`)
      .toArray();
    return program.some((row) => row.opcode === "Rowid") ? only.name : null;
  }

  objects(): readonly SchemaObject[] {
    return this.load().objects;
  }

  objectAt(root: number): SchemaObject | undefined {
    return this.load().byRoot.get(root);
  }

  isShadow(name: string): boolean {
    return this.load().shadows.has(name);
  }

  /** The user's tables (ordinary, virtual and shadow), by name. */
  tables(): ReadonlyMap<string, TableInfo> {
    return this.load().tables;
  }

  table(name: string): TableInfo | undefined {
    return this.load().tables.get(name);
  }
}
