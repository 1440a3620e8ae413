/**
 * What creating tables costs as the schema grows: on a fresh cluster of 4
 * replicas, --requests requests of --per CREATE TABLEs each, one after the
 * other; prints each request's time and the replicas' states after.
 *
 *   npm run bench:ddl [-- --requests 16] [--per 64] [--replicas 4] [--root PATH]
 *
 * `--root` builds another checkout of the project (for a bisection).
 */
import { parseArgs } from "node:util";
import { ClusterClient } from "./suite/cluster.ts";
import { startBenchServer } from "./suite/server.ts";

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "16" },
    per: { type: "string", default: "64" },
    replicas: { type: "string", default: "4" },
    root: { type: "string", default: "." },
  },
});
const requests = Number(values.requests);
const per = Number(values.per);

const server = await startBenchServer(values.root);
try {
  const cluster = new ClusterClient(server.url, `ddl-${Date.now().toString(36)}`);
  await cluster.setReplicaCount(Number(values.replicas));
  await cluster.waitCoherent(30_000);
  const times: number[] = [];
  for (let i = 0; i < requests; i++) {
    const started = Date.now();
    await cluster.data.exec(
      Array.from({ length: per }, (_, j) => ({
        sql: `CREATE TABLE t_${i}_${j} (id INTEGER PRIMARY KEY, v INTEGER)`,
      })),
    );
    times.push(Date.now() - started);
    process.stderr.write(`request ${i + 1}: ${times[i]} ms (${(i + 1) * per} tables)\n`);
  }
  const status = await cluster.status();
  console.log(
    `ms per request of ${per} CREATE TABLEs: ${times.join(", ")}; replicas after: ${status.replicas.map((r) => `${r.id} ${r.state}`).join(", ")}`,
  );
} finally {
  await server.stop();
}
// The dev server is stopped; sockets the admin client keeps alive would hold the process a minute more.
process.exit(process.exitCode ?? 0);
