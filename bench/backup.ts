/**
 * Export and import of a table of --rows rows (100,000 by default) against
 * `wrangler dev` (the bench bundle, collector off, 4 replicas): the export
 * streamed to a file, the file streamed back as the body of an import into an
 * empty cluster, then verify. For each: rows/s, the dump's size, and memory.
 *
 * Memory, as far as it can be measured here: one workerd process runs the
 * Worker and every Durable Object of the cluster, so its resident set, sampled
 * every 25 ms, is the Worker's and the master's (and the replicas', and
 * SQLite's page caches) together; the table gives its peak during each step
 * and how far that is above its size just before the step. The driver's own
 * peak RSS (Node, process.resourceUsage) shows the dump never sat in its
 * memory: it goes to and from a file.
 *
 *   node bench/backup.ts [--rows 100000]
 */
import {
  createReadStream,
  createWriteStream,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parseArgs } from "node:util";
import { startBenchServer } from "./suite/server.ts";

const { values } = parseArgs({ options: { rows: { type: "string", default: "100000" } } });
const ROWS = Number(values.rows);
const ADMIN = "dev-admin-token";
const log = (text: string) => process.stderr.write(`${text}\n`);

/** Every process below this one whose command is workerd: the dev server's runtimes. */
function workerdPids(): number[] {
  const parents = new Map<number, number>();
  const names = new Map<number, string>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parents.set(Number(entry), ppid);
      names.set(Number(entry), readFileSync(`/proc/${entry}/cmdline`, "utf8"));
    } catch {
      // The process ended meanwhile.
    }
  }
  const below = (pid: number): boolean => {
    for (let p = parents.get(pid); p !== undefined && p > 1; p = parents.get(p)) {
      if (p === process.pid) return true;
    }
    return false;
  };
  return [...names].filter(([pid, cmd]) => /workerd/.test(cmd) && below(pid)).map(([pid]) => pid);
}

function rssMb(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** The largest workerd's resident set, sampled until `stop` is called: [before, peak]. */
function sampleRss(): { stop: () => { before: number; peak: number } } {
  const pids = workerdPids();
  const now = () => Math.max(0, ...pids.map(rssMb));
  const before = now();
  let peak = before;
  const timer = setInterval(() => {
    peak = Math.max(peak, now());
  }, 25);
  return {
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, now());
      return { before, peak };
    },
  };
}

async function api(
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await response.json()) as Record<string, unknown>;
  if (!response.ok)
    throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

const server = await startBenchServer();
const dir = mkdtempSync(join(tmpdir(), "dosql-backup-bench-"));
try {
  const source = `backup-bench-${Date.now()}`;
  const target = `${source}-restored`;
  log(`seeding ${ROWS} rows into ${source} ...`);
  await api(server.url, "POST", `/v1/clusters/${source}/exec`, {
    statements: [
      { sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, r REAL, s TEXT, b BLOB)" },
    ],
  });
  // In commits of 10,000 rows: one record holds at most log_record_max_bytes of them.
  for (let from = 1; from <= ROWS; from += 10_000) {
    await api(server.url, "POST", `/v1/clusters/${source}/exec`, {
      statements: [
        {
          sql:
            "WITH RECURSIVE k(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM k WHERE i < ?) " +
            "INSERT INTO t SELECT i, i * 7919, i / 7.0, printf('row %d of the table', i), zeroblob(8) FROM k",
          params: [from, Math.min(ROWS, from + 9_999)],
        },
      ],
    });
  }
  const file = join(dir, "dump.sql");

  log("export ...");
  let sampler = sampleRss();
  let start = performance.now();
  const response = await fetch(`${server.url}/admin/clusters/${source}/export`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  if (!response.ok || response.body === null) throw new Error(`export: ${response.status}`);
  const firstByte = performance.now() - start;
  await pipeline(
    Readable.fromWeb(response.body as import("node:stream/web").ReadableStream),
    createWriteStream(file),
  );
  const exportSeconds = (performance.now() - start) / 1000;
  const exportRss = sampler.stop();
  const dumpBytes = statSync(file).size;
  const lsn = response.headers.get("x-snapshot-lsn");

  log("import ...");
  sampler = sampleRss();
  start = performance.now();
  const imported = await fetch(`${server.url}/admin/clusters/${target}/import`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/sql" },
    body: Readable.toWeb(createReadStream(file)) as ReadableStream,
    duplex: "half",
  } as RequestInit);
  const answer = (await imported.json()) as Record<string, unknown>;
  if (!imported.ok) throw new Error(`import: ${imported.status} ${JSON.stringify(answer)}`);
  const importSeconds = (performance.now() - start) / 1000;
  const importRss = sampler.stop();

  const verify = await api(server.url, "POST", `/admin/clusters/${target}/verify`);
  const count = await api(server.url, "POST", `/v1/clusters/${target}/query`, {
    sql: "SELECT count(*) AS n FROM t",
  });
  const restored = (count.rows as { n: number }[])[0]?.n;
  if (verify.agree !== true || restored !== ROWS) {
    throw new Error(`restored ${restored} rows, verify ${JSON.stringify(verify.mismatches)}`);
  }
  const driverPeakMb = process.resourceUsage().maxRSS / 1024;
  const mb = (n: number) => n.toFixed(0);
  console.log(
    `\n${ROWS} rows (5 columns, ${(dumpBytes / ROWS).toFixed(0)} bytes of dump a row), snapshot LSN ${lsn}; ` +
      `import: ${answer.batches} batches; verify agrees; workerd processes sampled: ${workerdPids().length}\n`,
  );
  console.log(
    "| step | seconds | rows/s | dump | workerd RSS before → peak (MB) | driver peak RSS (MB) |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  console.log(
    `| export (first byte after ${firstByte.toFixed(0)} ms) | ${exportSeconds.toFixed(2)} | ${Math.round(ROWS / exportSeconds)} | ` +
      `${(dumpBytes / 1e6).toFixed(1)} MB | ${mb(exportRss.before)} → ${mb(exportRss.peak)} | ${mb(driverPeakMb)} |`,
  );
  console.log(
    `| import | ${importSeconds.toFixed(2)} | ${Math.round(ROWS / importSeconds)} | ${(dumpBytes / 1e6).toFixed(1)} MB | ` +
      `${mb(importRss.before)} → ${mb(importRss.peak)} | ${mb(driverPeakMb)} |`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
  await server.stop();
}
