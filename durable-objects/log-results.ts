/**
 * Saved results a replica keeps in its log. Every keyed commit's result rides
 * in its log record, which a replica stores anyway; the lookup by key
 * (`r:<key>`, node-store.ts) is what a master needs to answer a retry. A
 * replica writes that lookup only when it needs it: for the records it
 * truncates (their results outlive the log: idempotency_retention_ms), and
 * for its whole log when it starts as master. On the commit path that saves
 * one write at a random key per record on every replica, which dirties a page
 * of its own; done a chunk at a time, keys that share a page share its write.
 *
 * Which results a node's lookup lacks is told by one flag: set when the node
 * starts as a replica (from then on its log may hold results the lookup
 * lacks), cleared once a master indexed its whole log. A node that stops while
 * indexing keeps the flag and indexes again (saving a result twice is saving
 * it once).
 */
import { isImportFirstBatch } from "../core/backup-protocol";
import type { SavedResult } from "../core/protocol";
import type { NodeStore } from "./node-store";

const UNINDEXED_FLAG = "log_results_unindexed";
/** Records read and indexed per chunk, and saved results per age entry. */
const CHUNK_RECORDS = 256;
/**
 * An age entry counts its results from the newest of them: kept that much past
 * their own age at most (a key used again with another body waits as long).
 */
const AGE_SPREAD_MS = 1000;

/** The node starts as a replica: results it logs from now on are not indexed. */
export function markLogResultsUnindexed(store: NodeStore): void {
  if (store.getMeta(UNINDEXED_FLAG) !== "1") store.setMeta(UNINDEXED_FLAG, "1");
}

/**
 * Saves the results the log's records after `afterLsn` through `through`
 * carry, under one age entry per chunk of records made within AGE_SPREAD_MS
 * (its newest creation time and LSN, so none is pruned sooner than on its
 * own); returns how many were saved. Those created before `expiredBefore` are
 * past idempotency_retention_ms: pruned on every other node already, they are
 * not brought back (their keys are free), but for an import's first batch.
 */
export function indexLogResults(
  store: NodeStore,
  afterLsn: number,
  through: number,
  expiredBefore = 0,
): number {
  let saved = 0;
  let from = afterLsn + 1;
  while (from <= through) {
    const records = store.readLog(from, CHUNK_RECORDS, Number.MAX_SAFE_INTEGER);
    let group: { result: SavedResult; createdAt: number }[] = [];
    let last = from - 1;
    for (const record of records) {
      if (record.lsn > through) break;
      last = record.lsn;
      const result = record.result;
      // An import's first batch is kept whatever its age (node-store.ts).
      if (result === undefined) continue;
      if (record.ts < expiredBefore && !isImportFirstBatch(result.key)) continue;
      const oldest = group[0]?.createdAt;
      if (oldest !== undefined && record.ts - oldest > AGE_SPREAD_MS) {
        store.saveResults(group);
        group = [];
      }
      group.push({ result, createdAt: record.ts });
      saved++;
    }
    if (last < from) break;
    store.saveResults(group);
    from = last + 1;
  }
  return saved;
}

/**
 * On a node starting as master: if it kept results only in its log (it was a
 * replica), they are indexed before it answers anything, one transaction per
 * chunk of records, and the flag is cleared in the last.
 */
export function indexWholeLog(
  storage: DurableObjectStorage,
  store: NodeStore,
  expiredBefore = 0,
): number {
  if (store.getMeta(UNINDEXED_FLAG) !== "1") return 0;
  const through = store.lastLsn();
  let after = store.truncatedThrough();
  let saved = 0;
  while (after < through) {
    const upTo = Math.min(through, after + CHUNK_RECORDS * 8);
    saved += storage.transactionSync(() => indexLogResults(store, after, upTo, expiredBefore));
    after = upTo;
  }
  storage.transactionSync(() => store.setMeta(UNINDEXED_FLAG, "0"));
  return saved;
}
