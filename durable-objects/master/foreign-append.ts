/**
 * What a master answers another master's append: the older of the two terms
 * gives way. Of a newer term, this master steps down (and the call fails, so
 * the sender retries once this node is a replica); of an older one, the
 * sender is told the newer term.
 */
import type { AppendRequest, AppendResponse } from "../../core/protocol";
import type { MasterCore } from "./core";

export function answerForeignAppend(
  core: MasterCore,
  member: string,
  request: AppendRequest,
): Promise<AppendResponse> {
  if (request.term > core.term) {
    core.stepDown(request.term);
    throw new Error(`${member} steps down: term ${request.term} has another master`);
  }
  return Promise.resolve({
    refused: `${member} is master of term ${core.term}`,
    ...(request.term < core.term ? { staleTerm: core.term } : {}),
    appliedLsn: 0,
    gap: false,
    echoSentAt: request.sentAt,
    skipped: 0,
    applied: 0,
    ackDelayedMs: 0,
  });
}
