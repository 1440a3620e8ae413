/**
 * How a commit waits for its acks. `none` answers after the local commit.
 * Otherwise a plain commit is handed to the waiter (its writer slot is freed
 * while acks travel) unless the hand-off is off or the waiter is full; a commit
 * that is not plain waits inline, holding its slot, and the reason is counted.
 *
 * Full means the waiter holds `async_dist_commit_max_outstanding` commits, or
 * responses of `waiter_max_held_bytes`: the cap is on memory as much as count.
 *
 * Plain means: no DDL (CREATE, DROP, ALTER). Here the waiter could finish any
 * commit — a response is held in memory either way — so DDL waits inline by
 * choice, not necessity: schema changes are rare and can take long to apply on
 * replicas (CREATE INDEX on a big table), and keeping the writer slot throttles
 * them to writer_concurrency in flight instead of letting them pile up in the
 * waiter. Comdb2 keeps them inline because its schema changes commit from their
 * own threads; that constraint does not exist on Durable Objects.
 */
export type SyncMode = "full" | "quorum" | "none";

export const SYNC_MODES: readonly SyncMode[] = ["full", "quorum", "none"];

export type InlineReason = "off" | "queueFull" | "notPlain";

export type WaitPlan =
  | { kind: "no-wait" }
  | { kind: "handoff" }
  | { kind: "inline"; reason: InlineReason };

export interface PolicyInput {
  syncMode: SyncMode;
  asyncDistCommit: boolean;
  maxOutstanding: number;
  handedOffNow: number;
  plain: boolean;
  /** Bytes of responses the waiter holds now, this response's, and the cap on both. */
  heldBytes: number;
  bytes: number;
  maxHeldBytes: number;
}

export function planWait(input: PolicyInput): WaitPlan {
  if (input.syncMode === "none") return { kind: "no-wait" };
  if (!input.asyncDistCommit) return { kind: "inline", reason: "off" };
  if (!input.plain) return { kind: "inline", reason: "notPlain" };
  if (input.handedOffNow >= input.maxOutstanding) return { kind: "inline", reason: "queueFull" };
  if (input.heldBytes + input.bytes > input.maxHeldBytes) {
    return { kind: "inline", reason: "queueFull" };
  }
  return { kind: "handoff" };
}
