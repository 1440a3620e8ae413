/**
 * Drizzle ORM and Kysely, unchanged, against `wrangler dev` through the
 * libSQL endpoint: a Drizzle app's schema, migrations (drizzle-kit's output,
 * applied by drizzle-orm's migrator), inserts, selects, db.batch and
 * transactions; and Kysely through @libsql/kysely-libsql. Also the data loss
 * D1 users met: a drizzle-kit table rebuild must never run ON DELETE CASCADE.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, type Client } from "@libsql/client";
import { LibsqlDialect } from "@libsql/kysely-libsql";
import { eq, sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/libsql";
import { migrate } from "drizzle-orm/libsql/migrator";
import { Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, startDevServer } from "./dev-server";
import journal from "./drizzle/migrations/meta/_journal.json";
import { posts, users } from "./drizzle/schema";

const DATA = "dev-data-token";
const MIGRATIONS = new URL("./drizzle/migrations", import.meta.url).pathname;

let server: DevServer;
let scratch: string;

/** A migrations folder holding only drizzle-kit's first `count` migrations. */
function firstMigrations(count: number): string {
  const folder = join(scratch, `first-${count}`);
  cpSync(MIGRATIONS, folder, { recursive: true });
  writeFileSync(
    join(folder, "meta", "_journal.json"),
    JSON.stringify({ ...journal, entries: journal.entries.slice(0, count) }),
  );
  return folder;
}

async function verify(cluster: string): Promise<boolean> {
  const response = await fetch(`${server.url}/admin/clusters/${cluster}/verify`, {
    method: "POST",
    headers: { authorization: "Bearer dev-admin-token" },
  });
  return ((await response.json()) as { agree: boolean }).agree;
}

beforeAll(async () => {
  server = await startDevServer();
  scratch = mkdtempSync(join(tmpdir(), "dosql-drizzle-"));
});

afterAll(async () => {
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe("Drizzle ORM (drizzle-orm/libsql), as written for Turso", () => {
  let client: Client;
  let db: ReturnType<typeof drizzle<{ users: typeof users; posts: typeof posts }>>;

  /** Who served each request (X-Served-By), to show reads go to replicas. */
  const servedBy: string[] = [];
  beforeAll(() => {
    client = createClient({
      url: `${server.url}/libsql/drizzle-e2e/`,
      authToken: DATA,
      fetch: async (request: Request) => {
        const response = await fetch(request);
        servedBy.push(response.headers.get("x-served-by") ?? "");
        return response;
      },
    });
    db = drizzle(client, { schema: { users, posts } });
  });
  afterAll(() => client?.close());

  it("applies drizzle-kit's migrations, and a rebuild of a child table keeps its rows", async () => {
    await migrate(db, { migrationsFolder: firstMigrations(1) });
    const [ada] = await db
      .insert(users)
      .values({ name: "ada", big: 2 ** 52 })
      .returning();
    expect(ada?.id).toBe(1);
    await db.insert(posts).values([
      { id: 1, userId: ada?.id, title: "first", body: Buffer.from([1, 2, 3]) },
      { id: 2, userId: ada?.id, title: "second" },
    ]);
    // 0001 rebuilds `posts` (copy, DROP TABLE, rename) with PRAGMA foreign_keys=OFF.
    await migrate(db, { migrationsFolder: firstMigrations(2) });
    const kept = await db.select().from(posts).orderBy(posts.id);
    expect(kept.map((p) => p.title)).toEqual(["first", "second"]);
    expect(new Uint8Array(kept[0]?.body as ArrayBuffer)).toEqual(new Uint8Array([1, 2, 3]));
  });

  it("refuses a rebuild of a parent table that would cascade, and loses no row", async () => {
    // 0002 rebuilds `users`: dropping it would run ON DELETE CASCADE on `posts`,
    // which Durable Object SQLite cannot switch off. The whole migration is refused.
    const error = await migrate(db, { migrationsFolder: firstMigrations(3) }).catch(
      (e: unknown) => e,
    );
    expect(String((error as Error)?.message)).toMatch(/foreign_keys=OFF cannot be honoured/);
    const left = await db.select({ n: sql<number>`count(*)` }).from(posts);
    expect(left[0]?.n).toBe(2);
    const applied = await db.all<{ n: number }>(
      sql`SELECT count(*) AS n FROM __drizzle_migrations`,
    );
    expect(applied[0]?.n).toBe(2);
  });

  it("inserts, selects, updates and deletes with the query builder; its reads come from replicas", async () => {
    await db.insert(users).values({ name: "grace", big: Number.MAX_SAFE_INTEGER });
    servedBy.length = 0;
    const grace = await db.select().from(users).where(eq(users.name, "grace"));
    expect(servedBy).toHaveLength(1);
    expect(servedBy[0]).toMatch(/^replica-\d+$/);
    expect(grace[0]?.big).toBe(Number.MAX_SAFE_INTEGER);
    await db.update(users).set({ big: 3 }).where(eq(users.name, "grace"));
    const found = await db.query.users.findFirst({ where: eq(users.name, "grace") });
    expect(found?.big).toBe(3);
    await db.delete(users).where(eq(users.name, "grace"));
    expect(await db.select().from(users).where(eq(users.name, "grace"))).toEqual([]);
  });

  it("runs db.batch as one transaction", async () => {
    const [inserted, counted] = await db.batch([
      db.insert(users).values({ name: "batch" }).returning({ id: users.id }),
      db.select({ n: sql<number>`count(*)` }).from(users),
    ]);
    expect(inserted[0]?.id).toBeGreaterThan(1);
    expect(counted[0]?.n).toBe(2);
    const failed = await db
      .batch([
        db.insert(users).values({ name: "never" }),
        db.insert(posts).values({ id: 1, title: "duplicate key" }),
      ])
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(Error);
    expect(await db.select().from(users).where(eq(users.name, "never"))).toEqual([]);
  });

  it("runs db.transaction, committing and rolling back", async () => {
    await db.transaction(async (tx) => {
      const [u] = await tx.insert(users).values({ name: "tx" }).returning();
      await tx.insert(posts).values({ id: 10, userId: u?.id, title: "in tx" });
    });
    expect(await db.select().from(posts).where(eq(posts.id, 10))).toHaveLength(1);
    await db
      .transaction(async (tx) => {
        await tx.insert(users).values({ name: "rolled back" });
        tx.rollback();
      })
      .catch(() => undefined);
    expect(await db.select().from(users).where(eq(users.name, "rolled back"))).toEqual([]);
  });

  it("leaves every replica identical", async () => {
    expect(await verify("drizzle-e2e")).toBe(true);
  });
});

interface KyselyDb {
  pets: { id: number; name: string; owner: string | null };
}

describe("Kysely through @libsql/kysely-libsql", () => {
  let k: Kysely<KyselyDb>;
  beforeAll(() => {
    k = new Kysely<KyselyDb>({
      dialect: new LibsqlDialect({ url: `${server.url}/libsql/kysely-e2e/`, authToken: DATA }),
    });
  });
  afterAll(async () => k?.destroy());

  it("creates a table, inserts, selects and runs a transaction", async () => {
    await k.schema
      .createTable("pets")
      .addColumn("id", "integer", (c) => c.primaryKey())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("owner", "text")
      .execute();
    await k.insertInto("pets").values({ id: 1, name: "rex", owner: null }).execute();
    await k.transaction().execute(async (tx) => {
      await tx.insertInto("pets").values({ id: 2, name: "tom", owner: "ann" }).execute();
      await tx.updateTable("pets").set({ owner: "bob" }).where("id", "=", 1).execute();
    });
    const rows = await k.selectFrom("pets").selectAll().orderBy("id").execute();
    expect(rows).toEqual([
      { id: 1, name: "rex", owner: "bob" },
      { id: 2, name: "tom", owner: "ann" },
    ]);
    const failed = await k
      .transaction()
      .execute(async (tx) => {
        await tx.insertInto("pets").values({ id: 3, name: "kit", owner: null }).execute();
        await tx.insertInto("pets").values({ id: 1, name: "dup", owner: null }).execute();
      })
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(Error);
    expect(await k.selectFrom("pets").select("id").where("id", "=", 3).execute()).toEqual([]);
    expect(await verify("kysely-e2e")).toBe(true);
  });
});
