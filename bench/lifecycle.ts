/**
 * Replica lifecycle measurements (4 replicas, 64 HTTP clients through the front door;
 * over HTTP, because under the in-runtime driver's load the Worker's own calls to
 * the master, status among them, wait until the load ends on the local runtime):
 *   catchup:   a replica stopped for --down seconds under full load, then
 *              restarted: seconds until it is coherent again, with
 *              logput_window_bytes at its default and at 0 (off), side by side.
 *   retention: --inserts inserts with one replica down for most of them: the log
 *              table's rows and bytes then, and after the replica caught up.
 *
 *   node bench/lifecycle.ts [--experiment catchup|retention|all] [--down 60] [--inserts 100000]
 *                           [--window BYTES (logput_window_bytes for the first catch-up run)]
 */
import { parseArgs } from "node:util";
import { startDevServer } from "../test/e2e/dev-server.ts";

const { values } = parseArgs({
  options: {
    experiment: { type: "string", default: "all" },
    down: { type: "string", default: "60" },
    inserts: { type: "string", default: "100000" },
    clients: { type: "string", default: "64" },
    window: { type: "string" },
  },
});
const downSeconds = Number(values.down);
const insertsWanted = Number(values.inserts);
const clients = Number(values.clients);

const server = await startDevServer("wrangler.toml");
const admin = { authorization: "Bearer dev-admin-token", "content-type": "application/json" };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (text: string) => process.stderr.write(`${text}\n`);

interface Status {
  master: { lsn: number; logRows: number; logBytes: number; truncatedThrough: number };
  replicas: {
    id: string;
    state: string;
    ackedLsn: number;
    bytesBehind: number;
    pullBatches: number;
    snapshots: number;
  }[];
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: admin,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

// Through an in-runtime object: see BenchDriver.admin for why.
const status = (c: string) => call<Status>("GET", `/admin/clusters/${c}/status`);
// The link is cut on the master's side (as a network partition would): a call from
// the master into a replica busy with a full load waits locally until the load ends.
const setStopped = (c: string, id: string, stop: boolean) =>
  call("POST", `/admin/clusters/${c}/replicas/${id}/${stop ? "disconnect" : "connect"}`);
const replica = async (c: string, id: string) => {
  const s = await status(c);
  const r = s.replicas.find((x) => x.id === id);
  if (r === undefined) throw new Error(`no ${id}`);
  return { s, r };
};

/** 64 clients, each inserting single rows into its own table, until stopped. */
function startLoad(cluster: string): { stop: () => Promise<{ inserts: number; errors: number }> } {
  let running = true;
  let inserts = 0;
  let errors = 0;
  const data = { authorization: "Bearer dev-data-token", "content-type": "application/json" };
  const client = async (i: number) => {
    const table = `load_${i}`;
    await fetch(`${server.url}/v1/clusters/${cluster}/exec`, {
      method: "POST",
      headers: data,
      body: JSON.stringify({
        statements: [
          { sql: `CREATE TABLE IF NOT EXISTS ${table} (id INTEGER PRIMARY KEY, v INTEGER)` },
        ],
      }),
    });
    for (let n = 0; running; n++) {
      try {
        const response = await fetch(`${server.url}/v1/clusters/${cluster}/tables/${table}/rows`, {
          method: "POST",
          headers: { ...data, "idempotency-key": `${table}-${n}` },
          body: JSON.stringify({ rows: [{ v: n }] }),
        });
        await response.text();
        if (response.ok) inserts++;
        else errors++;
      } catch {
        errors++;
      }
    }
  };
  const all = Promise.all(Array.from({ length: clients }, (_, i) => client(i)));
  return {
    async stop() {
      running = false;
      await all;
      return { inserts, errors };
    },
  };
}

async function catchup(windowBytes: number | null): Promise<Record<string, unknown>> {
  const cluster = `catchup-${Date.now().toString(36)}`;
  await call("PATCH", `/admin/clusters/${cluster}/tunables`, {
    debug_fault_injection: true,
    ...(windowBytes === null ? {} : { logput_window_bytes: windowBytes }),
  });
  const label =
    windowBytes === null ? "logput_window_bytes default" : `logput_window_bytes ${windowBytes}`;
  log(`catchup, ${label}: load for 10 s, replica-2 down ${downSeconds} s`);
  const load = startLoad(cluster);
  await sleep(10_000);
  await setStopped(cluster, "replica-2", true);
  const downAt = Date.now();
  while (Date.now() - downAt < downSeconds * 1000) {
    await sleep(5_000);
    const { s } = await replica(cluster, "replica-2");
    log(`  down ${Math.round((Date.now() - downAt) / 1000)} s, master LSN ${s.master.lsn}`);
  }
  const before = await replica(cluster, "replica-2");
  await setStopped(cluster, "replica-2", false);
  const startedAt = Date.now();
  let coherentAfter: number | null = null;
  let last = before;
  while (Date.now() - startedAt < 600_000) {
    await sleep(250);
    last = await replica(cluster, "replica-2");
    if (last.r.state === "coherent") {
      coherentAfter = (Date.now() - startedAt) / 1000;
      break;
    }
    if ((Date.now() - startedAt) % 5000 < 260) {
      log(
        `  restarted ${Math.round((Date.now() - startedAt) / 1000)} s ago, ${last.r.bytesBehind} bytes behind`,
      );
    }
  }
  const lsnAtEnd = last.s.master.lsn;
  const counts = await load.stop();
  const result = {
    setting: label,
    downSeconds,
    lsnAtRestart: before.s.master.lsn,
    behindAtRestartRecords: before.s.master.lsn - before.r.ackedLsn,
    behindAtRestartBytes: before.r.bytesBehind,
    coherentAfterSeconds: coherentAfter,
    insertsPerSecondDuringCatchup:
      coherentAfter === null ? null : Math.round((lsnAtEnd - before.s.master.lsn) / coherentAfter),
    pullBatches: last.r.pullBatches,
    snapshots: last.r.snapshots,
    failedRequests: counts.errors,
  };
  log(`  ${JSON.stringify(result)}`);
  return result;
}

async function retention(): Promise<Record<string, unknown>> {
  const cluster = `retention-${Date.now().toString(36)}`;
  await call("PATCH", `/admin/clusters/${cluster}/tunables`, { debug_fault_injection: true });
  const tunables = await call<Record<string, { value: number }>>(
    "GET",
    `/admin/clusters/${cluster}/tunables`,
  );
  log(`retention: ${insertsWanted} inserts, replica-2 down after the first 5%`);
  const load = startLoad(cluster);
  let stopped = false;
  for (;;) {
    await sleep(2_000);
    const { s } = await replica(cluster, "replica-2");
    if (!stopped && s.master.lsn >= insertsWanted * 0.05) {
      await setStopped(cluster, "replica-2", true);
      stopped = true;
    }
    log(
      `  master LSN ${s.master.lsn}, log rows ${s.master.logRows}, log bytes ${s.master.logBytes}`,
    );
    if (s.master.lsn >= insertsWanted) break;
  }
  await load.stop();
  await sleep(3_000); // one truncation step more
  const down = await replica(cluster, "replica-2");
  await setStopped(cluster, "replica-2", false);
  const startedAt = Date.now();
  let after = down;
  for (;;) {
    await sleep(500);
    after = await replica(cluster, "replica-2");
    if (
      after.r.state === "coherent" &&
      after.s.master.logRows <= (tunables.log_retain_records?.value ?? 0) + 1
    )
      break;
    if (Date.now() - startedAt > 600_000) break;
  }
  const result = {
    inserts: down.s.master.lsn,
    logRetainRecords: tunables.log_retain_records?.value,
    logMaxRecords: tunables.log_max_records?.value,
    whileDown: {
      logRows: down.s.master.logRows,
      logBytes: down.s.master.logBytes,
      truncatedThrough: down.s.master.truncatedThrough,
    },
    afterCatchUp: {
      seconds: (Date.now() - startedAt) / 1000,
      logRows: after.s.master.logRows,
      logBytes: after.s.master.logBytes,
      replicaState: after.r.state,
      snapshots: after.r.snapshots,
      pullBatches: after.r.pullBatches,
    },
  };
  log(`  ${JSON.stringify(result)}`);
  return result;
}

const results: Record<string, unknown> = {};
try {
  if (values.experiment === "catchup" || values.experiment === "all") {
    results.catchupWindow = await catchup(
      values.window === undefined ? null : Number(values.window),
    );
    results.catchupNoWindow = await catchup(0);
  }
  if (values.experiment === "retention" || values.experiment === "all") {
    results.retention = await retention();
  }
} finally {
  await server.stop();
}
console.log(JSON.stringify(results, null, 2));
