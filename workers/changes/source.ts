/**
 * Where the change stream reads its next page: the coherent replica nearest
 * the caller, or the master when the replica cannot serve it (it is not
 * coherent, its log starts later, it does not answer). Only the master's log
 * decides that records are gone.
 */
import { ApiError } from "../../core/errors";
import type { ChangesPage, ChangesRequest } from "../../durable-objects/change-feed";
import { memberStub, nearestReplica, onMaster } from "../cluster";
import { toApiError } from "../errors";

export type EventsPage = Extract<ChangesPage, { kind: "events" }>;

export async function changesPage(
  env: Env,
  request: ChangesRequest,
  cf: unknown,
): Promise<ChangesPage> {
  const replica = await nearestReplica(env, request.cluster, cf, "strong");
  if (replica !== null) {
    try {
      const page = (await memberStub(env, request.cluster, replica.id, replica.location).changes(
        request,
      )) as ChangesPage;
      if (page.kind === "events") return page;
    } catch (error) {
      console.warn(`changes on ${replica.id} failed, asking the master`, toApiError(error).message);
    }
  }
  return (await onMaster(
    env,
    request.cluster,
    async (master) => (await master.changes(request)) as ChangesPage,
  )) as ChangesPage;
}

/** The page, or the 410 that says how to start again. */
export function pageOrGone(page: ChangesPage): EventsPage {
  if (page.kind === "events") return page;
  if (page.kind === "gone") {
    const earliest = page.truncatedThrough + 1;
    throw new ApiError(
      "GONE",
      `the log no longer holds the commits after that LSN: it starts at LSN ${earliest}. ` +
        "Take an export (GET /admin/clusters/{cluster}/export) and stream from its X-Snapshot-Lsn",
      { earliest, truncatedThrough: page.truncatedThrough },
    );
  }
  throw new ApiError("UNAVAILABLE", `the change stream cannot be read now: ${page.reason}`, {
    retryAfterSeconds: 1,
  });
}
