/**
 * A consistent snapshot of the master's user data, for rebuilding a replica
 * that is behind the log's truncation point or new to the cluster.
 *
 * `begin` copies, in one synchronous transaction, every user table's exact
 * row images (cells, sql-value.ts: rowid or key included) into a shadow table
 * `_repl_snap_<n> (pos, img)`, with the schema and sqlite_sequence: the state
 * at exactly one LSN while writes go on. `chunk` pages images out by position
 * and by bytes. A failed stream keeps the shadows, so the retry resumes where
 * the replica's staging stopped instead of copying everything again; they go
 * when every replica (or export) that used them is done, or when the log no
 * longer holds the records after their LSN (`abandon`). An export reads the
 * same shadows (master/exports.ts), with the layout `take` records for it.
 */

import type { SnapshotPlan } from "../../core/protocol";
import { isUserName } from "../../core/reserved-names";
import { imageSqlColumns } from "../../core/schema-info";
import { quoteIdent } from "../../core/sql-lexer";
import { readSequence } from "../sqlite/apply";
import { isCaptureTrigger } from "../sqlite/capture";
import { imagesSql } from "../sqlite/checksums";
import { tableLayouts } from "../sqlite/dump-layout";
import { readFts5Settings } from "../sqlite/fts5-settings";
import type { SqlNode } from "../sqlite/schema";

const SHADOW_PREFIX = "_repl_snap_";

/** Order of re-creation: tables, then indexes, views and triggers (after the rows). */
const OBJECT_ORDER: Record<string, number> = { table: 0, index: 1, view: 2, trigger: 3 };

export class SnapshotSource {
  private plan: SnapshotPlan | null = null;
  private users = 0;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly node: SqlNode,
    private readonly currentLsn: () => number,
    private readonly currentLogEnd: () => number,
    private readonly termAt: (lsn: number) => number,
  ) {}

  /** The LSN of the live snapshot, whose log records after it must be kept. */
  get lsn(): number | null {
    return this.plan?.lsn ?? null;
  }

  /** Drops shadows left by a master that stopped mid-snapshot. */
  dropLeftovers(): void {
    const names = this.node.sql
      .exec<{ name: string }>(
        // Not LIKE '_repl_snap_%': `_` matches any character there.
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND substr(name, 1, ?) = ?",
        SHADOW_PREFIX.length,
        SHADOW_PREFIX,
      )
      .toArray();
    for (const { name } of names) this.node.sql.exec(`DROP TABLE ${quoteIdent(name)}`);
    // Shadows made or dropped behind the schema's back: a DDL's diff would see
    // them as the user's, and a dropped table can move another's root page.
    if (names.length > 0) this.node.schema.invalidate();
  }

  /** Joins the live snapshot, or takes a new one at the current LSN. */
  begin(): SnapshotPlan {
    if (this.plan === null) this.plan = this.take();
    this.users++;
    return this.plan;
  }

  private take(): SnapshotPlan {
    const { sql, schema } = this.node;
    return this.storage.transactionSync(() => {
      this.dropLeftovers();
      const copied: { name: string; shadow: string; columns: string[] }[] = [];
      for (const table of schema.tables().values()) {
        const select = imagesSql(this.node, table.name);
        if (select === null) continue;
        // Every virtual table kept is an fts5 table holding its own rows
        // (schema-info.ts): its rows are copied like any table's.
        const shadow = `${SHADOW_PREFIX}${copied.length}`;
        sql.exec(`CREATE TABLE ${quoteIdent(shadow)} (pos INTEGER PRIMARY KEY, img TEXT NOT NULL)`);
        sql.exec(`INSERT INTO ${quoteIdent(shadow)} (img) ${select}`);
        copied.push({ name: table.name, shadow, columns: imageSqlColumns(table) });
      }
      if (copied.length > 0) this.node.schema.invalidate();
      // What an export needs besides the rows, as the schema is now (dump-layout.ts).
      const layouts = tableLayouts(
        this.node,
        copied.map((t) => t.name),
      );
      const tables: SnapshotPlan["tables"] = copied.map((t, i) => ({
        ...t,
        parents: layouts[i]?.parents ?? [],
        parentKeys: layouts[i]?.parentKeys ?? [],
      }));
      const objects = schema
        .objects()
        .filter((o) => o.sql !== null && isUserName(o.name) && isUserName(o.tblName))
        .filter((o) => !(o.type === "trigger" && isCaptureTrigger(o.name)))
        .filter((o) => !schema.isShadow(o.name) && o.type in OBJECT_ORDER)
        .map((o) => ({ type: o.type, name: o.name, sql: o.sql ?? "" }))
        .sort((a, b) => (OBJECT_ORDER[a.type] ?? 9) - (OBJECT_ORDER[b.type] ?? 9));
      return {
        id: crypto.randomUUID(),
        lsn: this.currentLsn(),
        logEnd: this.currentLogEnd(),
        lastTerm: this.termAt(this.currentLsn()),
        tables,
        objects,
        sequence: readSequence(this.node),
        fts5Settings: readFts5Settings(this.node),
      };
    });
  }

  /** Images of table `index` after position `after`, up to about `maxBytes`. */
  chunk(
    id: string,
    index: number,
    after: number,
    maxBytes: number,
  ): { rows: { pos: number; img: string }[]; last: number } {
    this.check(id);
    const shadow = this.plan?.tables[index]?.shadow;
    if (shadow == null) return { rows: [], last: after };
    // Every statement is read to its end: one left open (a loop broken off)
    // keeps SQLite from dropping any table on this node (SQLITE_LOCKED), the
    // user's DROP TABLE included. So the sizes first (octet_length reads no
    // image), then exactly the images that fit.
    const sizes = this.node.sql
      .exec<{ pos: number; n: number }>(
        `SELECT pos, octet_length(img) AS n FROM ${quoteIdent(shadow)} WHERE pos > ? ORDER BY pos LIMIT 2000`,
        after,
      )
      .toArray();
    let bytes = 0;
    let take = 0;
    for (const { n } of sizes) {
      if (take > 0 && bytes + n + 16 > maxBytes) break;
      bytes += n + 16;
      take++;
    }
    if (take === 0) return { rows: [], last: after };
    const rows = this.node.sql
      .exec<{ pos: number; img: string }>(
        `SELECT pos, img FROM ${quoteIdent(shadow)} WHERE pos > ? ORDER BY pos LIMIT ?`,
        after,
        take,
      )
      .toArray()
      .map((row) => ({ pos: row.pos, img: row.img }));
    return { rows, last: rows[rows.length - 1]?.pos ?? after };
  }

  /** Throws unless snapshot `id` is still the live one (abandon() may have dropped it). */
  check(id: string): void {
    if (this.plan?.id !== id)
      throw new Error(`snapshot ${id} was abandoned: the log passed its LSN`);
  }

  /** Rows in each table of snapshot `id`, in plan order. */
  rowCounts(id: string): number[] {
    this.check(id);
    return (this.plan?.tables ?? []).map((t) =>
      Number(
        this.node.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${quoteIdent(t.shadow)}`).one()
          .n,
      ),
    );
  }

  /**
   * A user of snapshot `id` is done with it; nothing if that snapshot is gone
   * (abandoned, and perhaps another taken since, whose users are not this one's).
   */
  releaseIf(id: string): void {
    if (this.plan?.id === id) this.release();
  }

  /** A replica is done with the snapshot (installed it, or gave it up for good). */
  release(): void {
    this.users = Math.max(0, this.users - 1);
    if (this.users === 0) this.abandon();
  }

  /** A stream failed: its replica will retry, resuming from what it staged. */
  park(): void {
    this.users = Math.max(0, this.users - 1);
  }

  /** Drops the shadows now (no one uses them, or the log passed their LSN). */
  abandon(): void {
    if (this.plan === null) return;
    this.plan = null;
    this.users = 0;
    this.storage.transactionSync(() => this.dropLeftovers());
  }
}
