/**
 * An export's text, piece by piece, from its plan and a reader of row-image
 * pages: each piece is at most one page of rows, so the whole dump never sits
 * in memory. The order is `sqlite3 .dump`'s: the dump's PRAGMA and BEGIN, each
 * table's CREATE and then its rows (a foreign key's parent-key indexes and an
 * fts5 table's settings between the two), sqlite_sequence, then indexes, views
 * and triggers, and COMMIT.
 */
import type { ExportPage, ExportPlan } from "./backup-protocol";
import {
  DUMP_FOOTER,
  dumpHeader,
  fts5SettingLine,
  insertLine,
  insertPrefix,
  progressLine,
  sequenceLines,
  statementLine,
} from "./sql-dump";

/** The next page of table `index`'s images after position `after`. */
export type PageReader = (index: number, after: number) => Promise<ExportPage>;

export interface DumpOptions {
  cluster: string;
  /** Write a `-- progress: N of M rows` comment after every page. */
  progress: boolean;
  takenAt: Date;
}

export async function* dumpText(
  plan: ExportPlan,
  read: PageReader,
  options: DumpOptions,
): AsyncGenerator<string> {
  yield dumpHeader({
    cluster: options.cluster,
    lsn: plan.lsn,
    rows: plan.rows,
    tables: plan.tables.length,
    takenAt: options.takenAt,
  });
  let done = 0;
  for (const table of plan.tables) {
    let head = statementLine(table.sql);
    for (const index of table.indexes) head += statementLine(index);
    for (const setting of table.settings) {
      head += fts5SettingLine(table.name, setting.key, setting.value);
    }
    yield head;
    const prefix = insertPrefix(table.name, table.columns);
    for (let after = 0, left = table.rows; left > 0; ) {
      const page = await read(table.index, after);
      if (page.images.length === 0) break;
      let text = "";
      for (const image of page.images) text += insertLine(prefix, image);
      done += page.images.length;
      left -= page.images.length;
      after = page.last;
      if (options.progress) text += progressLine(done, plan.rows);
      yield text;
    }
  }
  let tail = sequenceLines(plan.sequence);
  for (const object of plan.after) tail += statementLine(object.sql);
  yield tail + DUMP_FOOTER;
}
