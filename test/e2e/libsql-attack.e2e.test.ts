/**
 * Adversarial reproductions against the libSQL endpoint with the real
 * packages (@libsql/client, drizzle-orm/libsql, Kysely), against `wrangler
 * dev`. Each test asserts what the issue promises ("a Drizzle app written
 * for Turso runs against `npm start` by changing only the URL and the token")
 * and once failed for the reason its comment gives; the "held" block keeps
 * attacks that held then. The workerd reproductions, with the platform's own
 * SQLite as ground truth, are in test/libsql-attack.test.ts.
 */
import { type Client, createClient } from "@libsql/client";
import { LibsqlDialect } from "@libsql/kysely-libsql";
import { drizzle } from "drizzle-orm/libsql";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { Kysely, sql as ksql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, startDevServer } from "./dev-server";

const DATA = "dev-data-token";

let server: DevServer;
const clients: Client[] = [];

beforeAll(async () => {
  server = await startDevServer();
});

afterAll(async () => {
  for (const client of clients) client.close();
  await server?.stop();
});

function client(cluster: string): Client {
  const c = createClient({ url: `${server.url}/libsql/${cluster}/`, authToken: DATA });
  clients.push(c);
  return c;
}

// A Drizzle table of 60 columns: id, then c0 … c58 as text.
const wideColumns = Object.fromEntries(
  Array.from({ length: 59 }, (_, i) => [`c${i}`, text(`c${i}`)]),
) as Record<string, ReturnType<typeof text>>;
const wide = sqliteTable("wide", { id: integer("id").primaryKey(), ...wideColumns });
const wideDdl = `CREATE TABLE wide (id INTEGER PRIMARY KEY, ${Array.from({ length: 59 }, (_, i) => `c${i} TEXT`).join(", ")})`;

describe("libSQL endpoint under attack, through the real packages", () => {
  // Promise: a Drizzle app written for Turso runs unchanged. Drizzle's
  // `.returning()` lists every column of the table; the exact-RETURNING
  // extension (core/returning.ts) appends one cell per item, so a table of 51
  // to 100 columns (Durable Objects allow 100) returns more than the 100
  // result columns SQLite allows: the insert fails with
  // `SQLITE_ERROR: too many columns in result set`, nothing written. Against
  // sqld (or the platform's own SQLite) it returns the row.
  it("Drizzle's insert(...).returning() on a 60-column table returns the row", async () => {
    const c = client("attack-drizzle-wide");
    await c.execute(wideDdl);
    const db = drizzle(c);
    // The columns are built in a loop, so Drizzle's types cannot name them.
    const [row] = (await db
      .insert(wide)
      .values({ c0: "a", c58: "z" } as never)
      .returning()) as Record<string, unknown>[];
    expect(row?.id).toBe(1);
    expect(row?.c58).toBe("z");
  });

  // Same through Kysely's returningAll(), which sends RETURNING *.
  it("Kysely's insertInto(...).returningAll() on a 60-column table returns the row", async () => {
    const db = new Kysely<{ wide: Record<string, string | number | null> }>({
      dialect: new LibsqlDialect({
        url: `${server.url}/libsql/attack-kysely-wide/`,
        authToken: DATA,
      }),
    });
    try {
      await ksql.raw(wideDdl).execute(db);
      const row = await db.insertInto("wide").values({ c0: "a" }).returningAll().executeTakeFirst();
      expect(row?.c0).toBe("a");
    } finally {
      await db.destroy();
    }
  });

  // Promise: each stream is a connection of its own, "as in sqld". In SQLite
  // and sqld, last_insert_rowid() in RETURNING is the rowid of the row just
  // inserted; here it is the stream's value from before the statement: 0, 0.
  it("@libsql/client: RETURNING last_insert_rowid() gives each row's rowid", async () => {
    const c = client("attack-ret-rowid");
    await c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v)");
    const r = await c.execute(
      "INSERT INTO t (v) VALUES ('a'), ('b') RETURNING id, last_insert_rowid() AS r",
    );
    expect(r.rows.map((row) => [row.id, row.r])).toEqual([
      [1, 1],
      [2, 2],
    ]);
  });
});

describe("held", () => {
  it("Drizzle's returning() on a 50-column table, and a transaction's counters, are exact", async () => {
    const c = client("attack-held-50");
    await c.execute(
      `CREATE TABLE w50 (id INTEGER PRIMARY KEY, ${Array.from({ length: 49 }, (_, i) => `c${i} TEXT`).join(", ")})`,
    );
    const cols = Object.fromEntries(
      Array.from({ length: 49 }, (_, i) => [`c${i}`, text(`c${i}`)]),
    ) as Record<string, ReturnType<typeof text>>;
    const w50 = sqliteTable("w50", { id: integer("id").primaryKey(), ...cols });
    const db = drizzle(c);
    const [row] = await db
      .insert(w50)
      .values({ c0: "a" } as never)
      .returning();
    expect(row?.id).toBe(1);
    const tx = await c.transaction("write");
    await tx.execute("INSERT INTO w50 (c0) VALUES ('b')");
    const read = await tx.execute("SELECT last_insert_rowid() AS r, changes() AS n");
    expect([read.rows[0]?.r, read.rows[0]?.n]).toEqual([2, 1]);
    await tx.commit();
  });
});
