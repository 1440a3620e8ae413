/**
 * The HTTP load driver: Node clients inserting through the front door's rows
 * route, each into its own table with one insert in flight, as a user's client
 * would (the dev server's proxy included): through the typed client (client/).
 */
import { ClusterError, DosqliteClient } from "../../client/index.ts";
import { summarizeLoad } from "../stats.ts";
import { DATA_TOKEN } from "./cluster.ts";
import type { LoadRequest, LoadResult } from "./load.ts";
import { TABLES_PER_REQUEST } from "../setup-batch.ts";

/** The typed client on one cluster's data plane, with the development token unless told. */
export function dataClient(url: string, cluster: string, token = DATA_TOKEN): DosqliteClient {
  return new DosqliteClient({ url, cluster, token });
}

/** How a failed insert reads in a run's errors: status and code, or why no answer came. */
export function describeFailure(error: unknown): string {
  if (error instanceof ClusterError && error.status > 0) {
    return `${error.status} ${error.code} ${error.message.slice(0, 200)}`;
  }
  return String(error);
}

/** Runs one DDL statement per table, 500 to a transaction, so set-up does not eat the run. */
async function forEachTable(
  client: DosqliteClient,
  tables: string[],
  statement: (table: string) => string,
): Promise<void> {
  for (let i = 0; i < tables.length; i += TABLES_PER_REQUEST) {
    await client.exec(
      tables.slice(i, i + TABLES_PER_REQUEST).map((table) => ({ sql: statement(table) })),
    );
  }
}

export function createTables(client: DosqliteClient, tables: string[]): Promise<void> {
  return forEachTable(
    client,
    tables,
    (table) => `CREATE TABLE IF NOT EXISTS ${table} (id INTEGER PRIMARY KEY, v INTEGER)`,
  );
}

/**
 * Drops a run's tables. Points share a cluster, and SQLite's DDL cost grows
 * with the schema: left behind, thousands of tables made each later point's
 * set-up slower than the one before.
 */
export function dropTables(client: DosqliteClient, tables: string[]): Promise<void> {
  return forEachTable(client, tables, (table) => `DROP TABLE IF EXISTS ${table}`);
}

/**
 * One insert of the load: one row through the rows route, keyed by table and
 * sequence number, one attempt (a failure is the run's to count, not to hide).
 */
export function insertOne(client: DosqliteClient, table: string, n: number) {
  return client.insertRows(table, [{ v: n }], { idempotencyKey: `${table}-${n}`, retry: false });
}

/** Runs `clients` clients for warm-up + measured seconds; latencies count after warm-up. */
export async function runHttpLoad(request: LoadRequest): Promise<LoadResult> {
  const tables = Array.from({ length: request.clients }, (_, i) => `h_${request.tag}_${i}`);
  const db = dataClient(request.url, request.cluster, request.token);
  await createTables(db, tables);
  const latencies: number[] = [];
  const errors: string[] = [];
  const startedAt = Date.now();
  const warmupUntil = startedAt + request.warmupSeconds * 1000;
  const until = warmupUntil + request.seconds * 1000;
  const client = async (table: string) => {
    for (let n = 0; Date.now() < until; n++) {
      const measuring = Date.now() >= warmupUntil;
      const started = performance.now();
      try {
        await insertOne(db, table, n);
        if (measuring) latencies.push(performance.now() - started);
      } catch (error) {
        errors.push(describeFailure(error));
      }
    }
  };
  await Promise.all(tables.map(client));
  const measured = (Date.now() - startedAt) / 1000 - request.warmupSeconds;
  await dropTables(db, tables);
  return summarizeLoad("http", request.clients, measured, latencies, errors);
}

/** Clients inserting until stopped (for experiments that act on the cluster meanwhile). */
export function startHttpLoad(
  url: string,
  cluster: string,
  clients: number,
  tag: string,
): { stop: () => Promise<{ inserts: number; errors: number }> } {
  let running = true;
  let inserts = 0;
  let errors = 0;
  const tables = Array.from({ length: clients }, (_, i) => `h_${tag}_${i}`);
  const db = dataClient(url, cluster);
  const client = async (table: string) => {
    for (let n = 0; running; n++) {
      try {
        await insertOne(db, table, n);
        inserts++;
      } catch {
        errors++;
      }
    }
  };
  const all = createTables(db, tables).then(() => Promise.all(tables.map(client)));
  return {
    async stop() {
      running = false;
      await all;
      return { inserts, errors };
    },
  };
}
