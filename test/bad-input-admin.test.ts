/**
 * The admin routes: every tunable against values of every wrong kind, unknown
 * tunable names, the fault routes while fault injection is off, their bodies,
 * and unknown replicas. See bad-input-helpers.ts.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { defaultTunables, describeTunables } from "../core/tunables";
import { call } from "./helpers";
import { type Case, DEEP, runCases, sweepCluster } from "./bad-input-helpers";

// ---------------------------------------------------------------------------
// Admin routes

describe("admin routes refuse invalid tunables, unknown replicas and faults while off", () => {
  const cluster = sweepCluster("admin");
  const patch = (body: unknown) => (c: string) =>
    call("PATCH", `/admin/clusters/${c}/tunables`, { body });
  const cases: Case[] = [];

  // Every tunable, with values of every wrong kind for its type.
  const badValues: Record<string, unknown[]> = {
    bool: ["true", 1, 0, null, [], {}],
    int: [1.5, "5", null, true, [], {}, -1e12, 1e12, Number.NaN],
    float: ["1", null, true, [], {}, -1e12, 1e12],
    enum: ["nope", "", 1, null, true, [], {}],
  };
  let described: Record<string, { type: string; min: number | null; max: number | null }> = {};
  beforeAll(async () => {
    const res = await call<typeof described>("GET", `/admin/clusters/${cluster.name}/tunables`);
    expect(res.status).toBe(200);
    described = res.body;
  });
  // Every tunable the code defines; the last test checks the cluster serves exactly these.
  const TUNABLES = Object.entries(describeTunables(defaultTunables())).map(
    ([name, d]) => [name, d.type] as const,
  );
  for (const [name, type] of TUNABLES) {
    for (const value of badValues[type] ?? []) {
      cases.push({
        name: `PATCH ${name} = ${JSON.stringify(value)}`,
        send: patch({ [name]: value }),
        status: 400,
        code: "INVALID_TUNABLE_VALUE",
      });
    }
    cases.push({
      name: `PATCH a good value, then ${name} nested 100,000 deep`,
      send: (c) =>
        call("PATCH", `/admin/clusters/${c}/tunables`, {
          raw: `{"rep_timeout_ms": 4000, "${name}": ${DEEP}}`,
        }),
      status: 400,
      code: "INVALID_TUNABLE_VALUE",
    });
  }
  cases.push(
    ...[
      "REP_TIMEOUT_MS",
      "rep_timeout_ms ",
      "rep-timeout-ms",
      "constructor",
      "toString",
      "__proto__",
      "",
    ].map((name) => ({
      name: `PATCH the unknown name ${JSON.stringify(name)} with a good value`,
      send: (c: string) =>
        call("PATCH", `/admin/clusters/${c}/tunables`, {
          raw: `{"rep_timeout_ms": 4000, ${JSON.stringify(name)}: 4000}`,
        }),
      status: 400,
      code: "UNKNOWN_TUNABLE",
    })),
    {
      name: "PATCH an unknown name nested 100,000 deep",
      send: (c) => call("PATCH", `/admin/clusters/${c}/tunables`, { raw: `{"nope": ${DEEP}}` }),
      status: 400,
      code: "UNKNOWN_TUNABLE",
    },
    { name: "PATCH nothing", send: patch({}), status: 400, code: "BAD_REQUEST" },
  );

  // Fault routes while debug_fault_injection is off: refused before they act.
  const fault = (method: string, path: string, body?: unknown): Case => ({
    name: `${method} ${path} while fault injection is off`,
    send: (c) => call(method, `/admin/clusters/${c}${path}`, body === undefined ? {} : { body }),
    status: 403,
    code: "FORBIDDEN",
  });
  cases.push(
    fault("POST", "/master/crash"),
    fault("POST", "/replicas/replica-1/stop"),
    fault("POST", "/replicas/replica-1/start"),
    fault("POST", "/replicas/replica-1/disconnect"),
    fault("POST", "/replicas/replica-1/connect"),
    fault("POST", "/replicas/replica-1/delay", { ms: 1000 }),
    fault("POST", "/replicas/replica-1/rewind", { lsn: 0 }),
    fault("POST", "/replicas/replica-1/crash"),
    fault("POST", "/replicas/replica-1/crash", { midBatch: true }),
    fault("POST", "/faults", { drop: 1 }),
    fault("POST", "/faults", {}),
  );

  // Bad bodies of the fault routes are 400 whether faults are on or off.
  const faultBody = (path: string, body: unknown): Case => ({
    name: `POST ${path} with ${JSON.stringify(body)}`,
    send: (c) => call("POST", `/admin/clusters/${c}${path}`, { body }),
    status: 400,
    code: "BAD_REQUEST",
  });
  for (const body of [{}, { ms: -1 }, { ms: 60_001 }, { ms: 1.5 }, { ms: "10" }, { ms: 1, x: 1 }]) {
    cases.push(faultBody("/replicas/replica-1/delay", body));
  }
  for (const body of [{}, { lsn: -1 }, { lsn: 0.5 }, { lsn: "0" }, { lsn: 0, x: 1 }]) {
    cases.push(faultBody("/replicas/replica-1/rewind", body));
  }
  for (const body of [{ midBatch: "yes" }, { midBatch: 1 }, { midBatch: true, x: 1 }, []]) {
    cases.push(faultBody("/replicas/replica-1/crash", body));
  }
  for (const body of [
    { drop: 2 },
    { delay: -0.1 },
    { seed: -1 },
    { seed: 1.5 },
    { delayMs: 10_001 },
    { duplicate: "0.5" },
    { reorder: 0.1, x: 1 },
  ]) {
    cases.push(faultBody("/faults", body));
  }

  // Unknown replicas.
  const missing = (method: string, path: string, body?: unknown): Case => ({
    name: `${method} ${path}`,
    send: (c) => call(method, `/admin/clusters/${c}${path}`, body === undefined ? {} : { body }),
    status: 404,
    code: "NOT_FOUND",
  });
  cases.push(
    missing("DELETE", "/replicas/replica-9"),
    missing("DELETE", "/replicas/replica-0"),
    missing("DELETE", "/replicas/master"),
    missing("DELETE", "/replicas/..%2F..%2Fmaster"),
    missing("POST", "/replicas/nobody/delay", { ms: 1 }),
    missing("POST", "/replicas/nobody/crash"),
    missing("POST", "/replicas/replica-1/pause"),
    missing("GET", "/replicas/replica-1"),
    missing("PUT", "/tunables", { rep_timeout_ms: 4000 }),
    missing("GET", "/verify"),
  );
  runCases(cases, cluster);

  it("sweeps every tunable the cluster has", () => {
    const swept = new Map<string, string>(TUNABLES);
    expect(Object.keys(described).sort()).toEqual([...swept.keys()].sort());
    for (const [name, d] of Object.entries(described)) expect(d.type, name).toBe(swept.get(name));
  });
});
