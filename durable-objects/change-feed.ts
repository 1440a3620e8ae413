/**
 * The change stream's page on one node, master or replica: the log records
 * after an LSN that the cluster has acknowledged, as events. A record is
 * acknowledged once the commit point (every coherent replica's ack) has
 * passed it; on a replica, once the commit point the master sent has, and
 * only as far as it has applied. What either serves is the same record: every
 * node keeps the master's log, record for record.
 */
import { type ChangeEvent, changeEvent, type TableNames } from "../core/change-events";
import { imageColumnNames, keyColumnNames } from "../core/schema-info";
import { asciiLower } from "../core/sql-lexer";
import { type DefinitionChange, isBefore, type NodeStore } from "./node-store";
import type { SqlNode } from "./sqlite/schema";

export interface ChangesRequest {
  cluster: string;
  /** Events after this LSN (the last one the client has). */
  after: number;
  limit: number;
  maxBytes: number;
  /** Only these tables' row changes; null for everything. */
  tables: string[] | null;
}

export type ChangesPage =
  | {
      kind: "events";
      events: ChangeEvent[];
      /** The last LSN looked at: the next page starts after it. */
      scanned: number;
      /** The highest LSN this node knows acknowledged. */
      acknowledged: number;
    }
  /** The records after `after` are gone from this node's log: it starts after `truncatedThrough`. */
  | { kind: "gone"; truncatedThrough: number }
  | { kind: "unavailable"; reason: string };

export function readChanges(
  node: SqlNode,
  store: NodeStore,
  request: ChangesRequest,
  acknowledged: number,
): ChangesPage {
  const truncatedThrough = store.truncatedThrough();
  if (request.after < truncatedThrough) return { kind: "gone", truncatedThrough };
  // SQLite's table names are ASCII-case-insensitive: so is the filter.
  const tables = request.tables === null ? null : new Set(request.tables.map(asciiLower));
  // Today's names fit a row only if the table's definition has not changed
  // since it was written: a DROP and re-CREATE, or DROP COLUMN then ADD
  // COLUMN, keeps the count and moves the meaning.
  const tableNames = new Map<string, { names: TableNames; since?: DefinitionChange } | null>();
  const definition = (name: string) => {
    const lower = asciiLower(name);
    if (tableNames.has(lower)) return tableNames.get(lower) ?? null;
    const table = node.schema.table(name);
    const since = store.definitionChangedAt(name);
    const names = table && { key: keyColumnNames(table), image: imageColumnNames(table) };
    const known = names ? { names, ...(since ? { since } : {}) } : null;
    tableNames.set(lower, known);
    return known;
  };
  const namesAt = (lsn: number) => (name: string, entry: number) => {
    const known = definition(name);
    if (known?.since && isBefore({ lsn, entry }, known.since)) return undefined;
    return known?.names;
  };
  const events: ChangeEvent[] = [];
  let scanned = request.after;
  if (request.after < acknowledged) {
    const limit = Math.min(request.limit, acknowledged - request.after);
    for (const record of store.readLog(request.after + 1, limit, request.maxBytes)) {
      if (record.lsn > acknowledged) break;
      const event = changeEvent(record, namesAt(record.lsn), tables);
      if (event !== null) events.push(event);
      scanned = record.lsn;
    }
  }
  return { kind: "events", events, scanned, acknowledged };
}
