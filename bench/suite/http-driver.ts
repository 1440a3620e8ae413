/**
 * The HTTP load driver: Node clients inserting through the front door's rows
 * route, each into its own table with one insert in flight, as a user's client
 * would (the dev server's proxy included).
 */
import { summarizeLoad } from "../stats.ts";
import { DATA_TOKEN } from "./cluster.ts";
import type { LoadRequest, LoadResult } from "./load.ts";

const headers = { authorization: `Bearer ${DATA_TOKEN}`, "content-type": "application/json" };

export interface Reply {
  status: number;
  body: string;
}

/** One POST to a data route; network failures throw. */
export async function post(
  url: string,
  path: string,
  body: unknown,
  extra: Record<string, string> = {},
): Promise<Reply> {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { ...headers, ...extra },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.text() };
}

/** Runs one DDL statement per table, 500 to a transaction, so set-up does not eat the run. */
async function forEachTable(
  url: string,
  cluster: string,
  tables: string[],
  statement: (table: string) => string,
  extra: Record<string, string>,
): Promise<void> {
  for (let i = 0; i < tables.length; i += 500) {
    const statements = tables.slice(i, i + 500).map((table) => ({ sql: statement(table) }));
    const reply = await post(url, `/v1/clusters/${cluster}/exec`, { statements }, extra);
    if (reply.status !== 200)
      throw new Error(`${statements[0]?.sql}: ${reply.status} ${reply.body}`);
  }
}

export function createTables(
  url: string,
  cluster: string,
  tables: string[],
  extra: Record<string, string> = {},
): Promise<void> {
  return forEachTable(
    url,
    cluster,
    tables,
    (table) => `CREATE TABLE IF NOT EXISTS ${table} (id INTEGER PRIMARY KEY, v INTEGER)`,
    extra,
  );
}

/**
 * Drops a run's tables. Points share a cluster, and SQLite's DDL cost grows
 * with the schema: left behind, thousands of tables made each later point's
 * set-up slower than the one before.
 */
export function dropTables(
  url: string,
  cluster: string,
  tables: string[],
  extra: Record<string, string> = {},
): Promise<void> {
  return forEachTable(url, cluster, tables, (table) => `DROP TABLE IF EXISTS ${table}`, extra);
}

export function insertPath(cluster: string, table: string): string {
  return `/v1/clusters/${cluster}/tables/${table}/rows`;
}

/** Runs `clients` clients for warm-up + measured seconds; latencies count after warm-up. */
export async function runHttpLoad(request: LoadRequest): Promise<LoadResult> {
  const tables = Array.from({ length: request.clients }, (_, i) => `h_${request.tag}_${i}`);
  const auth: Record<string, string> =
    request.token === undefined ? {} : { authorization: `Bearer ${request.token}` };
  await createTables(request.url, request.cluster, tables, auth);
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
        const reply = await post(
          request.url,
          insertPath(request.cluster, table),
          { rows: [{ v: n }] },
          { ...auth, "idempotency-key": `${table}-${n}` },
        );
        if (reply.status !== 200) errors.push(`${reply.status} ${reply.body.slice(0, 200)}`);
        else if (measuring) latencies.push(performance.now() - started);
      } catch (error) {
        errors.push(String(error));
      }
    }
  };
  await Promise.all(tables.map(client));
  const measured = (Date.now() - startedAt) / 1000 - request.warmupSeconds;
  await dropTables(request.url, request.cluster, tables, auth);
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
  const client = async (table: string) => {
    for (let n = 0; running; n++) {
      try {
        const reply = await post(
          url,
          insertPath(cluster, table),
          { rows: [{ v: n }] },
          { "idempotency-key": `${table}-${n}` },
        );
        if (reply.status === 200) inserts++;
        else errors++;
      } catch {
        errors++;
      }
    }
  };
  const all = createTables(url, cluster, tables).then(() => Promise.all(tables.map(client)));
  return {
    async stop() {
      running = false;
      await all;
      return { inserts, errors };
    },
  };
}
