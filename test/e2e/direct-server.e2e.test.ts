/**
 * The bench's second serving (bench:http): the same bundle served by workerd
 * alone, without wrangler dev's proxy. It must be the same database behind the
 * same front door: auth, a replicated write, a strong read on a replica.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDirectBenchServer } from "../../bench/suite/direct-server.ts";

let server: Awaited<ReturnType<typeof startDirectBenchServer>>;

beforeAll(async () => {
  server = await startDirectBenchServer();
});
afterAll(async () => {
  await server?.stop();
});

const post = (path: string, body: unknown, token = "dev-data-token") =>
  fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("the bench Worker served by workerd alone", () => {
  it("answers the front door's routes as wrangler dev does", async () => {
    const index = await fetch(`${server.url}/`);
    expect(index.status).toBe(200);
    expect(((await index.json()) as { name: string }).name).toBe("dosqlite-cluster");
    const refused = await post("/v1/clusters/direct/exec", { statements: [] }, "wrong");
    expect(refused.status).toBe(401);
    const made = await post("/v1/clusters/direct/exec", {
      statements: [
        { sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" },
        { sql: "INSERT INTO t (v) VALUES (?)", params: ["x"] },
      ],
    });
    expect(made.status, await made.clone().text()).toBe(200);
    const read = await post("/v1/clusters/direct/query", {
      sql: "SELECT v FROM t",
      replica: "replica-1",
      consistency: "strong",
    });
    expect(read.status, await read.clone().text()).toBe(200);
    expect(((await read.json()) as { rows: unknown[] }).rows).toEqual([{ v: "x" }]);
  });
});
