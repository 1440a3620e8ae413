import { describe, expect, it } from "vitest";
import { checkLinearizability } from "../core/linearizability";
import {
  RegisterHistory,
  type RegisterHistoryEvent,
  operationsFromHistory,
  parseHistory,
} from "../core/register-history";

/** A recorder on a clock the test moves by hand (milliseconds). */
function recorder(clients = 2) {
  let t = 1000;
  const history = new RegisterHistory(clients, () => t);
  return { history, at: (ms: number) => (t = 1000 + ms) };
}

describe("RegisterHistory (the recorder)", () => {
  it("records Jepsen-shaped events: index, type, process, f, key, value, time in nanoseconds", () => {
    const { history, at } = recorder();
    const w = history.invoke(0, { f: "write", key: "r1", value: 7 });
    at(2.5);
    const r = history.invoke(1, { f: "read", key: "r1", value: null }, "replica-2");
    at(4);
    history.ok(w);
    history.ok(r, { value: 7, node: "replica-2" });
    expect(history.events).toEqual([
      { index: 0, type: "invoke", process: 0, f: "write", key: "r1", value: 7, time: 0 },
      {
        index: 1,
        type: "invoke",
        process: 1,
        f: "read",
        key: "r1",
        value: null,
        node: "replica-2",
        time: 2_500_000,
      },
      { index: 2, type: "ok", process: 0, f: "write", key: "r1", value: 7, time: 4_000_000 },
      {
        index: 3,
        type: "ok",
        process: 1,
        f: "read",
        key: "r1",
        value: 7,
        node: "replica-2",
        time: 4_000_000,
      },
    ]);
  });

  it("gives a client a new process after an unknown outcome, and one operation per process", () => {
    const { history } = recorder(3);
    const first = history.invoke(2, { f: "cas", key: "r", value: [1, 2] });
    expect(() => history.invoke(2, { f: "read", key: "r", value: null })).toThrow(/already has/);
    history.info(first, "504 COMMIT_TIMEOUT");
    const second = history.invoke(2, { f: "cas", key: "r", value: [1, 3] });
    history.fail(second);
    expect(history.events.map((e) => [e.type, e.process, e.error])).toEqual([
      ["invoke", 2, undefined],
      ["info", 2, "504 COMMIT_TIMEOUT"],
      ["invoke", 5, undefined],
      ["fail", 5, undefined],
    ]);
    expect(() => history.fail(second)).toThrow(/no operation/);
  });
});

describe("operationsFromHistory", () => {
  it("pairs invocations with completions; an unknown or unfinished one never completes", () => {
    const { history, at } = recorder(3);
    const w = history.invoke(0, { f: "write", key: "r", value: 1 });
    const c = history.invoke(1, { f: "cas", key: "r", value: [1, 2] });
    at(1);
    history.ok(w);
    history.info(c, "no answer");
    const r = history.invoke(0, { f: "read", key: "r", value: null }, "master");
    history.invoke(2, { f: "write", key: "r", value: 3 });
    at(2);
    history.ok(r, { value: 2, node: "master" });
    const ops = operationsFromHistory(parseHistory(JSON.parse(JSON.stringify(history.events))));
    expect(ops).toEqual([
      {
        id: 0,
        process: 0,
        key: "r",
        outcome: "ok",
        invoke: 0,
        complete: 2,
        invokeMs: 0,
        completeMs: 1,
        f: "write",
        value: 1,
      },
      {
        id: 1,
        process: 1,
        key: "r",
        outcome: "info",
        invoke: 1,
        complete: null,
        invokeMs: 0,
        error: "no answer",
        f: "cas",
        value: [1, 2],
      },
      {
        id: 4,
        process: 0,
        key: "r",
        outcome: "ok",
        invoke: 4,
        complete: 6,
        invokeMs: 1,
        completeMs: 2,
        node: "master",
        f: "read",
        value: 2,
      },
      {
        id: 5,
        process: 2,
        key: "r",
        outcome: "info",
        invoke: 5,
        complete: null,
        invokeMs: 1,
        error: "still running when the history ended",
        f: "write",
        value: 3,
      },
    ]);
    // The unknown cas took effect before the read: linearizable.
    expect(checkLinearizability(ops).linearizable).toBe(true);
  });

  it("refuses a malformed history", () => {
    const event = (patch: Partial<RegisterHistoryEvent>): RegisterHistoryEvent => ({
      index: 0,
      type: "invoke",
      process: 0,
      f: "write",
      key: "r",
      value: 1,
      time: 0,
      ...patch,
    });
    expect(() => operationsFromHistory([event({ type: "ok" })])).toThrow(/completes no open/);
    expect(() => operationsFromHistory([event({}), event({ index: 1 })])).toThrow(/open/);
    expect(() => operationsFromHistory([event({ index: 3 }), event({ index: 2 })])).toThrow(
      /out of order/,
    );
    expect(() =>
      operationsFromHistory([event({}), event({ index: 1, type: "ok", key: "other" })]),
    ).toThrow(/completes no open/);
    expect(() => parseHistory({})).toThrow(/JSON array/);
    expect(() => parseHistory([event({ f: "cas", value: 1 })])).toThrow(/event 0: bad value/);
    expect(() => parseHistory([{ ...event({}), type: "done" }])).toThrow(/bad type/);
    expect(parseHistory([event({ f: "cas", value: [null, 2] })])).toHaveLength(1);
  });
});
