/**
 * SQLite's ROLLBACK conflict resolution would roll back the runtime's own
 * transaction under a commit (the object resets, and writes that committed
 * beside it are answered as failed): the guard refuses every form of it, on
 * /exec as on the libSQL endpoint, before anything runs.
 */
import { describe, expect, it } from "vitest";
import { exec, freshCluster, status, verify } from "./helpers";

describe("ROLLBACK conflict resolution", () => {
  it.each([
    ["OR ROLLBACK", "CREATE TABLE t (a PRIMARY KEY)", "INSERT OR ROLLBACK INTO t VALUES (1)"],
    ["UPDATE OR ROLLBACK", "CREATE TABLE t (a PRIMARY KEY)", "UPDATE OR ROLLBACK t SET a = 1"],
    [
      "ON CONFLICT ROLLBACK",
      "CREATE TABLE t (a UNIQUE ON CONFLICT ROLLBACK)",
      "INSERT INTO t VALUES (1)",
    ],
    [
      "NOT NULL ON CONFLICT ROLLBACK",
      "CREATE TABLE t (a NOT NULL ON CONFLICT ROLLBACK)",
      "INSERT INTO t VALUES (1)",
    ],
    [
      "RAISE(ROLLBACK) in a trigger",
      "CREATE TABLE t (a) | CREATE TRIGGER tr BEFORE INSERT ON t WHEN new.a > 1 BEGIN SELECT RAISE(ROLLBACK, 'no'); END",
      "INSERT INTO t VALUES (1)",
    ],
  ])("%s is refused up front, and the master does not reset", async (_, schema, write) => {
    const c = freshCluster("rollback-res");
    for (const sql of schema.split(" | ")) expect((await exec(c, [{ sql }])).status).toBe(200);
    const epoch = ((await status(c)).body as unknown as { master: { epoch: number } }).master.epoch;
    const res = await exec(c, [{ sql: write }]);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(JSON.stringify(res.body)).toMatch(/ROLLBACK conflict resolution/);
    expect(((await status(c)).body as unknown as { master: { epoch: number } }).master.epoch).toBe(
      epoch,
    );
    expect((await verify(c)).body.agree).toBe(true);
  });
});
