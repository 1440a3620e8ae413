import { describe, expect, it } from "vitest";
import { type CheckInput, History, type NodeRows, checkHistory } from "../core/history";

/** A history on a clock the test moves by hand. */
function recorder() {
  let t = 0;
  const history = new History(() => t);
  return { history, at: (ms: number) => (t = ms) };
}

const agree = { agree: true, mismatches: [] };

function check(history: History, nodes: NodeRows[], verify: CheckInput["verify"] = agree) {
  return checkHistory({ events: history.events, nodes, verify });
}

const everywhere = (values: string[]): NodeRows[] =>
  ["master", "replica-1", "replica-2"].map((node) => ({ node, values }));

describe("checkHistory", () => {
  it("passes a history where every promise was kept, and counts what happened", () => {
    const { history, at } = recorder();
    const a = history.invokeWrite("k-a", "a");
    at(10);
    history.ok(a, { lsn: 2 });
    // b: unknown, retried with the same key, then acked (replayed: same LSN).
    at(11);
    const b1 = history.invokeWrite("k-b", "b");
    at(20);
    history.unknown(b1, "503 UNAVAILABLE");
    const b2 = history.invokeWrite("k-b", "b");
    at(30);
    history.ok(b2, { lsn: 3 });
    // c: a definite failure, not present.
    const c = history.invokeWrite("k-c", "c");
    history.fail(c, "400 INVALID_SQL");
    // d: unknown to the end, and present: allowed.
    const d = history.invokeWrite("k-d", "d");
    history.unknown(d, "network error");
    at(40);
    const r = history.invokeRead(["a", "b", "d"]);
    at(45);
    history.ok(r, { seen: ["a", "b"], servedBy: "replica-1" });
    const report = check(history, everywhere(["a", "b", "d"]));
    expect(report).toMatchObject({
      ops: 6,
      writes: 4,
      acked: 2,
      failed: 1,
      unknown: 1,
      retried: 1,
      reads: 1,
      lost: [],
      duplicated: [],
      failedPresent: [],
      staleReads: [],
      diverged: [],
      unexpected: [],
      valid: true,
    });
  });

  it("finds an acked write missing on one node", () => {
    const { history } = recorder();
    history.ok(history.invokeWrite("k-a", "a"), { lsn: 2 });
    const report = check(history, [
      { node: "master", values: ["a"] },
      { node: "replica-2", values: [] },
    ]);
    expect(report.lost).toEqual(["k-a on replica-2"]);
    expect(report.valid).toBe(false);
  });

  it("finds a value present twice on a node", () => {
    const { history } = recorder();
    const op = history.invokeWrite("k-a", "a");
    history.unknown(op, "reset");
    history.ok(history.invokeWrite("k-a", "a"), { lsn: 4 });
    const report = check(history, everywhere(["a", "a"]));
    expect(report.duplicated).toContain("k-a present 2 times on master");
    expect(report.valid).toBe(false);
  });

  it("finds a retry that executed again: two acks of one key with different LSNs", () => {
    const { history } = recorder();
    history.ok(history.invokeWrite("k-a", "a"), { lsn: 4 });
    history.ok(history.invokeWrite("k-a", "a"), { lsn: 9 });
    const report = check(history, everywhere(["a"]));
    expect(report.duplicated).toEqual(["k-a: acked at LSNs 4, 9"]);
  });

  it("finds a write answered with a definite failure that is present anyway", () => {
    const { history } = recorder();
    history.fail(history.invokeWrite("k-a", "a"), "400 INVALID_SQL");
    const report = check(history, [
      { node: "master", values: [] },
      { node: "replica-1", values: ["a"] },
    ]);
    expect(report.failedPresent).toEqual(["k-a on replica-1"]);
  });

  it("finds a key answered both ok and with a definite failure", () => {
    const { history } = recorder();
    history.ok(history.invokeWrite("k-a", "a"), { lsn: 2 });
    history.fail(history.invokeWrite("k-a", "a"), "400 INVALID_SQL");
    expect(check(history, everywhere(["a"])).failedPresent).toEqual([
      "k-a: acked and also answered with a definite failure",
    ]);
  });

  it("finds a strong read that missed a write acked before it began", () => {
    const { history, at } = recorder();
    const w = history.invokeWrite("k-a", "a");
    at(100);
    history.ok(w, { lsn: 2 });
    at(130);
    const r = history.invokeRead(["a"]);
    at(140);
    history.ok(r, { seen: [], servedBy: "replica-3" });
    const report = check(history, everywhere(["a"]));
    expect(report.staleReads).toEqual([
      "read 1 on replica-3 missed k-a, acked 30 ms before it began",
    ]);
    expect(report.valid).toBe(false);
  });

  it("does not count a read that began before the write was acked as stale", () => {
    const { history, at } = recorder();
    const w = history.invokeWrite("k-a", "a");
    at(50);
    const r = history.invokeRead(["a"]);
    at(100);
    history.ok(w, { lsn: 2 });
    at(120);
    history.ok(r, { seen: [], servedBy: "replica-1" });
    // An unknown outcome is no promise either.
    const u = history.invokeWrite("k-b", "b");
    history.unknown(u, "timeout");
    const r2 = history.invokeRead(["a", "b"]);
    history.ok(r2, { seen: ["a"], servedBy: "master" });
    expect(check(history, everywhere(["a"])).staleReads).toEqual([]);
  });

  it("finds a read that saw a write answered with a definite failure", () => {
    const { history } = recorder();
    history.fail(history.invokeWrite("k-a", "a"), "400 INVALID_SQL");
    const r = history.invokeRead(["a"]);
    history.ok(r, { seen: ["a"], servedBy: "replica-1" });
    expect(check(history, everywhere([])).failedPresent).toEqual([
      "k-a seen by read 1 on replica-1",
    ]);
  });

  it("finds nodes that do not converge: verify disagrees, or the rows differ", () => {
    const { history } = recorder();
    history.unknown(history.invokeWrite("k-a", "a"), "reset");
    const split = check(history, [
      { node: "master", values: ["a"] },
      { node: "replica-1", values: [] },
    ]);
    expect(split.diverged).toEqual(["replica-1: rows differ from master's"]);
    const verify = check(history, everywhere(["a"]), {
      agree: false,
      mismatches: ["replica-2: at LSN 3, master at 4"],
    });
    expect(verify.diverged).toEqual(["verify: replica-2: at LSN 3, master at 4"]);
    expect(verify.valid).toBe(false);
  });

  it("finds a value no write ever sent", () => {
    const { history } = recorder();
    expect(check(history, everywhere(["ghost"])).unexpected).toEqual([
      "ghost on master",
      "ghost on replica-1",
      "ghost on replica-2",
    ]);
  });

  it("refuses a malformed history: one key used for two values", () => {
    const { history } = recorder();
    history.invokeWrite("k-a", "a");
    history.invokeWrite("k-a", "b");
    expect(() => check(history, [])).toThrow(/two values/);
  });
});
