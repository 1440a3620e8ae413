import { describe, expect, it } from "vitest";
import { Scheduler } from "../core/scheduler";

describe("Scheduler", () => {
  it("starts empty with nothing due and no next wake-up", () => {
    const scheduler = new Scheduler();
    expect(scheduler.size).toBe(0);
    expect(scheduler.next()).toBeNull();
    expect(scheduler.due(Number.MAX_SAFE_INTEGER)).toEqual([]);
  });

  it("keeps at most one due time per name", () => {
    const scheduler = new Scheduler();
    scheduler.at("heartbeat", 100);
    scheduler.at("heartbeat", 200);
    scheduler.at("prune", 300);
    expect(scheduler.size).toBe(2);
    expect(scheduler.has("heartbeat")).toBe(true);
    expect(scheduler.has("prune")).toBe(true);
    expect(scheduler.has("waiter")).toBe(false);
  });

  it("replaces an earlier plan with a later one when scheduled with at", () => {
    const scheduler = new Scheduler();
    scheduler.at("heartbeat", 100);
    scheduler.at("heartbeat", 500);
    expect(scheduler.next()).toBe(500);
    expect(scheduler.due(499)).toEqual([]);
    expect(scheduler.due(500)).toEqual(["heartbeat"]);
  });

  it("replaces a later plan with an earlier one when scheduled with at", () => {
    const scheduler = new Scheduler();
    scheduler.at("heartbeat", 500);
    scheduler.at("heartbeat", 100);
    expect(scheduler.next()).toBe(100);
    expect(scheduler.due(100)).toEqual(["heartbeat"]);
  });

  it("keeps the earlier due time when atLatest asks for a later one", () => {
    const scheduler = new Scheduler();
    scheduler.at("waiter", 100);
    scheduler.atLatest("waiter", 500);
    expect(scheduler.next()).toBe(100);
    expect(scheduler.due(100)).toEqual(["waiter"]);
  });

  it("moves the due time forward when atLatest asks for an earlier one", () => {
    const scheduler = new Scheduler();
    scheduler.at("waiter", 500);
    scheduler.atLatest("waiter", 100);
    expect(scheduler.next()).toBe(100);
    expect(scheduler.due(100)).toEqual(["waiter"]);
    expect(scheduler.size).toBe(0);
  });

  it("schedules a name that had no plan when atLatest is called", () => {
    const scheduler = new Scheduler();
    scheduler.atLatest("relay:A", 250);
    expect(scheduler.has("relay:A")).toBe(true);
    expect(scheduler.next()).toBe(250);
  });

  it("forgets a cancelled job", () => {
    const scheduler = new Scheduler();
    scheduler.at("heartbeat", 100);
    scheduler.at("prune", 200);
    scheduler.cancel("heartbeat");
    expect(scheduler.has("heartbeat")).toBe(false);
    expect(scheduler.size).toBe(1);
    expect(scheduler.next()).toBe(200);
    expect(scheduler.due(1000)).toEqual(["prune"]);
  });

  it("ignores the cancellation of an unknown name", () => {
    const scheduler = new Scheduler();
    scheduler.at("heartbeat", 100);
    scheduler.cancel("missing");
    expect(scheduler.size).toBe(1);
    expect(scheduler.next()).toBe(100);
  });

  it("returns the jobs due at now earliest first, including one due exactly now", () => {
    const scheduler = new Scheduler();
    scheduler.at("c", 300);
    scheduler.at("a", 100);
    scheduler.at("later", 301);
    scheduler.at("b", 200);
    expect(scheduler.due(300)).toEqual(["a", "b", "c"]);
  });

  it("removes the due jobs and leaves the others scheduled", () => {
    const scheduler = new Scheduler();
    scheduler.at("a", 100);
    scheduler.at("b", 200);
    scheduler.at("c", 300);
    expect(scheduler.due(200)).toEqual(["a", "b"]);
    expect(scheduler.size).toBe(1);
    expect(scheduler.has("a")).toBe(false);
    expect(scheduler.has("b")).toBe(false);
    expect(scheduler.has("c")).toBe(true);
    expect(scheduler.due(200)).toEqual([]);
    expect(scheduler.next()).toBe(300);
  });

  it("returns nothing and removes nothing when no job is due yet", () => {
    const scheduler = new Scheduler();
    scheduler.at("a", 100);
    expect(scheduler.due(99)).toEqual([]);
    expect(scheduler.size).toBe(1);
  });

  it("reports the earliest due time as next whatever the insertion order", () => {
    const scheduler = new Scheduler();
    scheduler.at("late", 900);
    scheduler.at("early", 50);
    scheduler.at("middle", 400);
    expect(scheduler.next()).toBe(50);
    scheduler.cancel("early");
    expect(scheduler.next()).toBe(400);
  });

  it("reports no next wake-up once every job was handed out", () => {
    const scheduler = new Scheduler();
    scheduler.at("a", 100);
    scheduler.at("b", 200);
    scheduler.due(200);
    expect(scheduler.next()).toBeNull();
    expect(scheduler.size).toBe(0);
  });

  it("lets a handed-out job be scheduled again", () => {
    const scheduler = new Scheduler();
    scheduler.at("heartbeat", 100);
    expect(scheduler.due(100)).toEqual(["heartbeat"]);
    scheduler.atLatest("heartbeat", 600);
    expect(scheduler.next()).toBe(600);
  });
});
