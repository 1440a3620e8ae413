/**
 * The HTTP load driver on its own, against a running server: each client
 * inserts single rows into its own table through the rows route, one insert in
 * flight, for a fixed time. Prints inserts/s and commit latency percentiles.
 *
 *   node bench/http-load.ts --clients 16 --seconds 20 [--warmup 0] [--token T] [--url http://127.0.0.1:8787] [--cluster main]
 */
import { parseArgs } from "node:util";
import { runHttpLoad } from "./suite/http-driver.ts";
import { nextTag } from "./suite/measure.ts";

const { values } = parseArgs({
  options: {
    url: { type: "string", default: "http://127.0.0.1:8787" },
    cluster: { type: "string", default: "main" },
    clients: { type: "string", default: "16" },
    seconds: { type: "string", default: "20" },
    warmup: { type: "string", default: "0" },
    token: { type: "string", default: "dev-data-token" },
  },
});

const result = await runHttpLoad({
  url: values.url.replace(/\/$/, ""),
  cluster: values.cluster,
  clients: Number(values.clients),
  seconds: Number(values.seconds),
  warmupSeconds: Number(values.warmup),
  tag: nextTag(),
  token: values.token,
});
console.log(JSON.stringify(result));
