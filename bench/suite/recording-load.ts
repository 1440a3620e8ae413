/**
 * HTTP clients that remember every insert acknowledged to them, for the crash
 * experiment. An insert whose outcome is unknown (a 5xx or a broken
 * connection) is resent with the same Idempotency-Key until it is answered, as
 * a careful client would; a retry of an insert the old master had written is
 * answered from its saved result ("replayed") instead of inserting again.
 */
import { sleep } from "./cluster.ts";
import { createTables, insertPath, post } from "./http-driver.ts";
import type { Success } from "./recovery.ts";

/** Resends of one insert before the client gives up on it. */
const MAX_ATTEMPTS = 40;
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
  const insert = async (table: string, n: number) => {
    for (let attempt = 1; ; attempt++) {
      const sentAt = Date.now();
      let outcome: string;
      try {
        const reply = await Promise.race([
          post(
            url,
            insertPath(cluster, table),
            { rows: [{ v: n }] },
            { "idempotency-key": `${table}-${n}` },
          ),
          sleep(ATTEMPT_TIMEOUT_MS).then(() => null),
        ]);
        if (reply !== null && reply.status === 200) {
          run.acked.get(table)?.add(n);
          run.successes.push({ sentAt, doneAt: Date.now() });
          if ((JSON.parse(reply.body) as { replayed?: boolean }).replayed === true) run.replayed++;
          return;
        }
        if (reply !== null && reply.status < 500) {
          fail(`${reply.status} ${reply.body.slice(0, 200)}`);
          return;
        }
        outcome = reply === null ? "no answer" : `${reply.status} ${reply.body.slice(0, 200)}`;
      } catch (error) {
        outcome = String(error);
      }
      if (attempt >= MAX_ATTEMPTS) {
        fail(`gave up after ${attempt} attempts: ${outcome}`);
        return;
      }
      if (attempt === 1) run.retriedRequests++;
      run.resends++;
      await sleep(Math.min(1000, 25 * 2 ** attempt));
    }
  };
  const ready = createTables(url, cluster, tables);
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
  const present = new Map<string, number[]>();
  for (const table of tables) {
    const values: number[] = [];
    let last = 0;
    for (;;) {
      const reply = await post(url, `/v1/clusters/${cluster}/query`, {
        sql: `SELECT id, v FROM ${table} WHERE id > ? ORDER BY id LIMIT 5000`,
        params: [last],
        consistency: "strong",
      });
      if (reply.status !== 200)
        throw new Error(`read ${table}: ${reply.status} ${reply.body.slice(0, 200)}`);
      const rows = (JSON.parse(reply.body) as { rows: { id: number; v: number }[] }).rows;
      for (const row of rows) values.push(row.v);
      const tail = rows[rows.length - 1];
      if (rows.length < 5000 || tail === undefined) break;
      last = tail.id;
    }
    present.set(table, values);
  }
  return present;
}
