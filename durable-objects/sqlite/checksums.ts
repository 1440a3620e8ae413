/**
 * Verify's view of one node: a SHA-256 over the exact image of every row of
 * every user table (rowid or primary key included, every value as a cell, in
 * key order), over the user schema's SQL, and over sqlite_sequence. Two nodes
 * agree only if they hold the same values of the same storage classes under
 * the same keys. Virtual tables are hashed by their content and their fts5
 * settings, not their shadow tables, whose layout is the module's own.
 */
import { createHash } from "node:crypto";
import type { NodeChecksums, TableChecksum } from "../../core/protocol";
import { isUserName } from "../../core/reserved-names";
import { imageSqlColumns, keySqlColumns } from "../../core/schema-info";
import { quoteIdent } from "../../core/sql-lexer";
import { rowSql } from "../../core/sql-value";
import { isCaptureTrigger } from "./capture";
import { readFts5Settings } from "./fts5-settings";
import type { SqlNode } from "./schema";

/** SELECT of a table's key and image cells in key order. */
export function imagesSql(node: SqlNode, name: string): string | null {
  const table = node.schema.table(name);
  if (table === undefined || (table.kind !== "table" && table.kind !== "virtual")) return null;
  const image = rowSql(imageSqlColumns(table));
  return `SELECT ${image} FROM ${quoteIdent(name)} ORDER BY ${keySqlColumns(table).join(", ")}`;
}

export function nodeChecksums(node: SqlNode, label: string, appliedLsn: number): NodeChecksums {
  const schema = createHash("sha256");
  const objects = node.schema
    .objects()
    .filter((o) => isUserName(o.name) && isUserName(o.tblName) && !isCaptureTrigger(o.name))
    .filter((o) => !node.schema.isShadow(o.tblName))
    .map((o) => `${o.type}\u001f${o.name}\u001f${o.tblName}\u001f${o.sql ?? ""}`)
    .sort();
  for (const line of objects) schema.update(`${line}\u001e`);
  if (node.schema.objects().some((o) => o.name === "sqlite_sequence")) {
    for (const [name, seq] of node.sql
      .exec("SELECT name, CAST(seq AS TEXT) FROM sqlite_sequence ORDER BY name")
      .raw()) {
      schema.update(`seq\u001f${String(name)}\u001f${String(seq)}\u001e`);
    }
  }
  for (const { table, key, value } of readFts5Settings(node)) {
    schema.update(`fts5\u001f${table}\u001f${key}\u001f${value}\u001e`);
  }
  const tables: Record<string, TableChecksum> = {};
  for (const name of [...node.schema.tables().keys()].sort()) {
    const select = imagesSql(node, name);
    if (select === null) continue;
    const hash = createHash("sha256");
    let rows = 0;
    for (const [image] of node.sql.exec(select).raw()) {
      hash.update(String(image));
      hash.update("\u001e");
      rows++;
    }
    tables[name] = { rows, checksum: hash.digest("hex").slice(0, 32) };
  }
  return { node: label, appliedLsn, schema: schema.digest("hex").slice(0, 32), tables };
}
