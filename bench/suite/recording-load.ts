/**
 * HTTP clients that remember every insert acknowledged to them, for the crash
 * experiment. An insert whose outcome is unknown (a 5xx or a broken
 * connection) is resent with the same Idempotency-Key until it is answered, as
 * a careful client would; a retry of an insert the old master had written is
 * answered from its saved result ("replayed") instead of inserting again.
 */
import { ClusterError, DosqliteClient, type RetryPolicy } from "../../client/index.ts";
import { DATA_TOKEN } from "./cluster.ts";
import { createTables, dataClient, describeFailure } from "./http-driver.ts";
import type { Success } from "./recovery.ts";

/**
 * Resends of one insert before the client gives up on it, 50 ms after the
 * first failure and doubling to 1 s. Retry-After is not waited for: the
 * experiment measures how soon inserts succeed again.
 */
const INSERT_RETRY: RetryPolicy = {
  maxAttempts: 40,
  baseDelayMs: 50,
  maxDelayMs: 1000,
  deadlineMs: Number.POSITIVE_INFINITY,
  jitter: "none",
  honourRetryAfter: false,
};
/** No single attempt waits longer than this (commit_timeout_ms is 30 s by default). */
const ATTEMPT_TIMEOUT_MS = 35_000;

export interface RecordedRun {
  tables: string[];
  /** Acknowledged values (the column v) by table. */
  acked: Map<string, Set<number>>;
  successes: Success[];
  /** Inserts resent at least once, resends in all, and answers marked replayed. */
  retriedRequests: number;
  resends: number;
  replayed: number;
  /** Inserts given up after MAX_ATTEMPTS, or refused with a 4xx. */
  failed: number;
  firstFailure: string | null;
}

export function startRecordingLoad(
  url: string,
  cluster: string,
  clients: number,
  tag: string,
): { ready: Promise<void>; stop: () => Promise<RecordedRun> } {
  let running = true;
  const tables = Array.from({ length: clients }, (_, i) => `c_${tag}_${i}`);
  const run: RecordedRun = {
    tables,
    acked: new Map(tables.map((t) => [t, new Set<number>()])),
    successes: [],
    retriedRequests: 0,
    resends: 0,
    replayed: 0,
    failed: 0,
    firstFailure: null,
  };
  const fail = (why: string) => {
    run.failed++;
    run.firstFailure ??= why;
  };
  const db = new DosqliteClient({
    url,
    cluster,
    token: DATA_TOKEN,
    retry: INSERT_RETRY,
    attemptTimeoutMs: ATTEMPT_TIMEOUT_MS,
  });
  const insert = async (table: string, n: number) => {
    let sentAt = 0;
    try {
      const result = await db.insertRows(table, [{ v: n }], {
        idempotencyKey: `${table}-${n}`,
        hooks: {
          onAttempt: () => {
            sentAt = Date.now();
          },
          onRetry: ({ attempt }) => {
            if (attempt === 1) run.retriedRequests++;
            run.resends++;
          },
        },
      });
      run.acked.get(table)?.add(n);
      run.successes.push({ sentAt, doneAt: Date.now() });
      if (result.replayed === true) run.replayed++;
    } catch (error) {
      if (error instanceof ClusterError && error.retryable) {
        fail(`gave up after ${error.attempts} attempts: ${describeFailure(error)}`);
      } else {
        fail(describeFailure(error));
      }
    }
  };
  const ready = createTables(db, tables);
  const all = ready.then(() =>
    Promise.all(
      tables.map(async (table) => {
        for (let n = 0; running; n++) await insert(table, n);
      }),
    ),
  );
  return {
    ready,
    async stop() {
      running = false;
      await all;
      return run;
    },
  };
}

/** Every value of column v in each table, duplicates included, read in pages by rowid. */
export async function readBack(
  url: string,
  cluster: string,
  tables: string[],
): Promise<Map<string, number[]>> {
  const db = dataClient(url, cluster);
  const present = new Map<string, number[]>();
  for (const table of tables) {
    const values: number[] = [];
    let last = 0;
    for (;;) {
      const reply = await db
        .query(`SELECT id, v FROM ${table} WHERE id > ? ORDER BY id LIMIT 5000`, [last], {
          consistency: "strong",
          retry: false,
        })
        .catch((error: unknown) => {
          throw new Error(`read ${table}: ${describeFailure(error)}`);
        });
      const rows = reply.rows as { id: number; v: number }[];
      for (const row of rows) values.push(row.v);
      const tail = rows[rows.length - 1];
      if (rows.length < 5000 || tail === undefined) break;
      last = tail.id;
    }
    present.set(table, values);
  }
  return present;
}
