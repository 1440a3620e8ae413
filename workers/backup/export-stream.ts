/**
 * GET …/export as a stream: the master takes (or joins) a snapshot and says
 * what it holds; the dump's text is then made page by page (core/dump-writer.ts),
 * one RPC for each page of about EXPORT_PAGE_BYTES of row images, each fetched
 * only when the client has read the one before (a pull stream with no queue of
 * its own). So neither the Worker nor the master holds more than a page, and a
 * slow client slows the export rather than filling memory. The snapshot is
 * released when the dump ends, when it fails, and when the client goes away.
 */
import type { ExportPage, ExportPlan } from "../../core/backup-protocol";
import { dumpText } from "../../core/dump-writer";
import { failureLine } from "../../core/sql-dump";
import { onMaster } from "../cluster";

export const DUMP_CONTENT_TYPE = "application/sql; charset=utf-8";

export interface ExportOptions {
  progress: boolean;
  /** Keeps the request alive for work after the response (the release when a client leaves). */
  waitUntil: (promise: Promise<unknown>) => void;
}

export async function exportResponse(
  env: Env,
  cluster: string,
  options: ExportOptions,
): Promise<Response> {
  const plan = (await onMaster(env, cluster, (master) =>
    master.exportBegin(cluster),
  )) as ExportPlan;
  let released: Promise<unknown> | null = null;
  const release = () => {
    released ??= onMaster(env, cluster, (master) => master.exportEnd(cluster, plan.id)).catch(
      (error: unknown) => {
        // The master also ends an export that sits idle: this only frees it sooner.
        console.warn(`${cluster}: export ${plan.id} not released`, error);
      },
    );
    return released;
  };
  const read = async (index: number, after: number) =>
    (await onMaster(env, cluster, (master) =>
      master.exportPage(cluster, plan.id, index, after),
    )) as ExportPage;
  const pieces = dumpText(plan, read, {
    cluster,
    progress: options.progress,
    takenAt: new Date(),
  });
  const encoder = new TextEncoder();
  let failure: unknown = null;
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        // The failure's comment went out with the last pull: now the transfer fails too.
        if (failure !== null) {
          controller.error(failure);
          return;
        }
        try {
          const next = await pieces.next();
          if (next.done === true) {
            // Released before the body ends: once it has, the request may be over.
            await release();
            controller.close();
            return;
          }
          controller.enqueue(encoder.encode(next.value));
        } catch (error) {
          failure = error;
          const message = error instanceof Error ? error.message : String(error);
          controller.enqueue(encoder.encode(failureLine(message)));
          options.waitUntil(release());
        }
      },
      cancel() {
        options.waitUntil(release());
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, {
    headers: {
      "content-type": DUMP_CONTENT_TYPE,
      "content-disposition": `attachment; filename="${cluster}-lsn-${plan.lsn}.sql"`,
      "cache-control": "no-store",
      "x-snapshot-lsn": String(plan.lsn),
      "x-export-rows": String(plan.rows),
    },
  });
}
