import { describe, expect, it } from "vitest";
import { ApiError, type ErrorCode } from "../core/errors";
import {
  applyPatch,
  defaultTunables,
  describeTunables,
  isTunableName,
  TUNABLE_NAMES,
  type Tunables,
  tunablesFromStored,
} from "../core/tunables";

function patchError(current: Tunables, patch: unknown): ApiError {
  try {
    applyPatch(current, patch);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error(`applyPatch accepted ${JSON.stringify(patch)}`);
}

function expectRejected(patch: unknown, code: ErrorCode): ApiError {
  const current = defaultTunables();
  const before = structuredClone(current);
  const error = patchError(current, patch);
  expect(error.code).toBe(code);
  expect(error.status).toBe(400);
  expect(current).toEqual(before);
  return error;
}

describe("defaultTunables", () => {
  it("gives the defaults the API mandates", () => {
    expect(defaultTunables()).toMatchObject({
      async_dist_commit: true,
      async_dist_commit_max_outstanding: 1024,
      writer_concurrency: 8,
      rep_timeout_ms: 5000,
      coherency_lease_ms: 500,
      heartbeat_ms: 200,
      logput_window_bytes: 4_000_000,
      slow_replica_factor: 2.0,
      // On: an acknowledged write is on a majority, which promotion without the master needs.
      durable_lsns: true,
      commit_timeout_ms: 30_000,
      idempotency_retention_ms: 86_400_000,
      relay_window: 32,
      relay_calls_in_flight: 1,
      relay_call_gap_ms: 0,
      relay_batch_max_records: 512,
      debug_ack_delay_ms: 0,
      debug_apply_delay_ms: 0,
      debug_link_delay_ms: 0,
      debug_fault_injection: false,
    });
  });

  it("returns a fresh object each time", () => {
    const first = defaultTunables();
    first.writer_concurrency = 99;
    expect(defaultTunables().writer_concurrency).toBe(8);
  });

  it("lists exactly the schema's names in TUNABLE_NAMES", () => {
    expect([...TUNABLE_NAMES].sort()).toEqual(Object.keys(defaultTunables()).sort());
  });

  it("recognises only own schema names as tunable names", () => {
    expect(isTunableName("writer_concurrency")).toBe(true);
    expect(isTunableName("no_such_knob")).toBe(false);
    expect(isTunableName("constructor")).toBe(false);
    expect(isTunableName("__proto__")).toBe(false);
  });
});

describe("describeTunables", () => {
  it("describes every tunable with value, default, type, bounds and description", () => {
    const current = { ...defaultTunables(), writer_concurrency: 3 };
    const described = describeTunables(current);
    expect(Object.keys(described).sort()).toEqual([...TUNABLE_NAMES].sort());
    for (const name of TUNABLE_NAMES) {
      const entry = described[name];
      const keys = ["default", "description", "max", "min", "type", "value"];
      if (entry.type === "enum") keys.push("values");
      expect(Object.keys(entry).sort()).toEqual(keys.sort());
      expect(entry.value).toBe(current[name]);
      expect(entry.description.length).toBeGreaterThan(0);
    }
  });

  it("reports the current value next to the default", () => {
    const described = describeTunables({ ...defaultTunables(), writer_concurrency: 3 });
    expect(described.writer_concurrency).toMatchObject({
      value: 3,
      default: 8,
      type: "int",
      min: 1,
      max: 1024,
    });
  });

  it("describes sync_mode as an enum of full, quorum and none, full by default", () => {
    const described = describeTunables(defaultTunables());
    expect(described.sync_mode).toMatchObject({
      value: "full",
      default: "full",
      type: "enum",
      min: null,
      max: null,
      values: ["full", "quorum", "none"],
    });
  });

  it("accepts only the listed values for an enum", () => {
    expect(applyPatch(defaultTunables(), { sync_mode: "quorum" }).next.sync_mode).toBe("quorum");
    for (const bad of ["Full", "majority", 1, true, null]) {
      expect(() => applyPatch(defaultTunables(), { sync_mode: bad })).toThrow(
        expect.objectContaining({ code: "INVALID_TUNABLE_VALUE" }),
      );
    }
  });

  it("gives booleans null bounds", () => {
    const described = describeTunables(defaultTunables());
    expect(described.async_dist_commit).toMatchObject({
      value: true,
      default: true,
      type: "bool",
      min: null,
      max: null,
    });
    expect(described.durable_lsns.type).toBe("bool");
  });

  it("types slow_replica_factor as a float and the millisecond knobs as ints", () => {
    const described = describeTunables(defaultTunables());
    expect(described.slow_replica_factor).toMatchObject({ type: "float", min: 0, max: 100 });
    expect(described.debug_ack_delay_ms).toMatchObject({ type: "int", min: 0, default: 0 });
    expect(described.rep_timeout_ms.type).toBe("int");
  });
});

describe("applyPatch", () => {
  it("returns merged tunables and the changed names without touching current", () => {
    const current = defaultTunables();
    const before = structuredClone(current);
    const { next, changed } = applyPatch(current, {
      writer_concurrency: 2,
      async_dist_commit: false,
      slow_replica_factor: 1.5,
    });
    expect(next).toEqual({
      ...before,
      writer_concurrency: 2,
      async_dist_commit: false,
      slow_replica_factor: 1.5,
    });
    expect(changed).toEqual(["writer_concurrency", "async_dist_commit", "slow_replica_factor"]);
    expect(current).toEqual(before);
    expect(next).not.toBe(current);
  });

  it("accepts values on the bounds", () => {
    const { next } = applyPatch(defaultTunables(), {
      writer_concurrency: 1,
      async_dist_commit_max_outstanding: 100_000,
      slow_replica_factor: 0,
    });
    expect(next.writer_concurrency).toBe(1);
    expect(next.async_dist_commit_max_outstanding).toBe(100_000);
    expect(next.slow_replica_factor).toBe(0);
  });

  it("rejects an unknown name with UNKNOWN_TUNABLE listing the unknown names", () => {
    const error = expectRejected(
      { writer_concurrency: 2, bogus: 1, other_bogus: true },
      "UNKNOWN_TUNABLE",
    );
    expect(error.details).toEqual({ names: ["bogus", "other_bogus"] });
  });

  it("reports unknown names before bad values", () => {
    expectRejected({ writer_concurrency: "many", bogus: 1 }, "UNKNOWN_TUNABLE");
  });

  it("rejects a value of the wrong type with INVALID_TUNABLE_VALUE", () => {
    expectRejected({ async_dist_commit: 1 }, "INVALID_TUNABLE_VALUE");
    expectRejected({ async_dist_commit: "true" }, "INVALID_TUNABLE_VALUE");
    expectRejected({ writer_concurrency: "8" }, "INVALID_TUNABLE_VALUE");
    expectRejected({ writer_concurrency: true }, "INVALID_TUNABLE_VALUE");
    expectRejected({ writer_concurrency: null }, "INVALID_TUNABLE_VALUE");
    expectRejected({ slow_replica_factor: Number.NaN }, "INVALID_TUNABLE_VALUE");
    expectRejected({ slow_replica_factor: Number.POSITIVE_INFINITY }, "INVALID_TUNABLE_VALUE");
  });

  it("rejects a value out of bounds with INVALID_TUNABLE_VALUE", () => {
    expectRejected({ writer_concurrency: 0 }, "INVALID_TUNABLE_VALUE");
    expectRejected({ writer_concurrency: 1025 }, "INVALID_TUNABLE_VALUE");
    expectRejected({ async_dist_commit_max_outstanding: 100_001 }, "INVALID_TUNABLE_VALUE");
    expectRejected({ slow_replica_factor: -0.1 }, "INVALID_TUNABLE_VALUE");
    expectRejected({ debug_ack_delay_ms: -1 }, "INVALID_TUNABLE_VALUE");
  });

  it("rejects a non-integer for an int tunable but accepts one for a float", () => {
    const error = expectRejected({ writer_concurrency: 2.5 }, "INVALID_TUNABLE_VALUE");
    expect(error.details).toEqual({ name: "writer_concurrency", value: 2.5 });
    expect(applyPatch(defaultTunables(), { slow_replica_factor: 2.5 }).next).toMatchObject({
      slow_replica_factor: 2.5,
    });
  });

  it("repeats a refused array or object as null and a long string cut to 100 characters", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(expectRejected({ rep_timeout_ms: deep }, "INVALID_TUNABLE_VALUE").details).toEqual({
      name: "rep_timeout_ms",
      value: null,
    });
    expect(expectRejected({ durable_lsns: { a: 1 } }, "INVALID_TUNABLE_VALUE").details).toEqual({
      name: "durable_lsns",
      value: null,
    });
    const long = expectRejected({ sync_mode: "x".repeat(5000) }, "INVALID_TUNABLE_VALUE");
    expect(long.details).toEqual({ name: "sync_mode", value: "x".repeat(100) });
  });

  it("changes nothing when a later entry is bad after good ones", () => {
    const current = defaultTunables();
    const before = structuredClone(current);
    const error = patchError(current, {
      writer_concurrency: 2,
      async_dist_commit: false,
      rep_timeout_ms: 1,
    });
    expect(error.code).toBe("INVALID_TUNABLE_VALUE");
    expect(error.message).toContain("rep_timeout_ms");
    expect(current).toEqual(before);
  });

  it("rejects a patch that is not an object or is empty with BAD_REQUEST", () => {
    expectRejected(null, "BAD_REQUEST");
    expectRejected([1, 2], "BAD_REQUEST");
    expectRejected("writer_concurrency=2", "BAD_REQUEST");
    expectRejected({}, "BAD_REQUEST");
  });
});

describe("tunablesFromStored", () => {
  it("loads stored JSON values over the defaults", () => {
    const loaded = tunablesFromStored([
      { name: "writer_concurrency", value: "4" },
      { name: "durable_lsns", value: "true" },
      { name: "slow_replica_factor", value: "0.5" },
    ]);
    expect(loaded).toEqual({
      ...defaultTunables(),
      writer_concurrency: 4,
      durable_lsns: true,
      slow_replica_factor: 0.5,
    });
  });

  it("ignores unknown names", () => {
    const loaded = tunablesFromStored([
      { name: "retired_knob", value: "7" },
      { name: "relay_window", value: "16" },
    ]);
    expect(loaded).toEqual({ ...defaultTunables(), relay_window: 16 });
    expect(Object.hasOwn(loaded, "retired_knob")).toBe(false);
  });

  it("falls back to the default for out-of-bound, mistyped or unparsable values", () => {
    const loaded = tunablesFromStored([
      { name: "writer_concurrency", value: "5000" },
      { name: "relay_window", value: "0" },
      { name: "async_dist_commit", value: "1" },
      { name: "rep_timeout_ms", value: "12.5" },
      { name: "heartbeat_ms", value: "not json" },
    ]);
    expect(loaded).toEqual(defaultTunables());
  });

  it("returns the defaults when nothing is stored", () => {
    expect(tunablesFromStored([])).toEqual(defaultTunables());
  });
});

describe("tunables that contradict each other", () => {
  it.each([
    [{ idempotency_retention_ms: 1000 }, "commit_timeout_ms", "idempotency_retention_ms"],
    [
      { idempotency_retention_ms: 10_000, commit_timeout_ms: 20_000 },
      "commit_timeout_ms",
      "idempotency_retention_ms",
    ],
    [{ heartbeat_ms: 500 }, "heartbeat_ms", "coherency_lease_ms"],
    [{ coherency_lease_ms: 100 }, "heartbeat_ms", "coherency_lease_ms"],
    [{ commit_timeout_ms: 1000 }, "rep_timeout_ms", "commit_timeout_ms"],
    [{ rep_timeout_ms: 60_000 }, "rep_timeout_ms", "commit_timeout_ms"],
  ])("refuse %j, naming %s and %s, and change nothing", (patch, a, b) => {
    const error = expectRejected(patch, "INVALID_TUNABLE_VALUE");
    expect(error.message).toContain(a);
    expect(error.message).toContain(b);
    expect(error.details?.conflictsWith).toBeTypeOf("string");
  });

  it("accept the same values when the patch moves both sides together", () => {
    const { next } = applyPatch(defaultTunables(), {
      idempotency_retention_ms: 1000,
      commit_timeout_ms: 1000,
      rep_timeout_ms: 1000,
      coherency_lease_ms: 100,
      heartbeat_ms: 50,
    });
    expect(next).toMatchObject({ commit_timeout_ms: 1000, heartbeat_ms: 50 });
  });

  it("do not block an unrelated patch when a stored pair already contradicts", () => {
    const stored = { ...defaultTunables(), heartbeat_ms: 900 };
    expect(applyPatch(stored, { relay_window: 4 }).next.relay_window).toBe(4);
  });
});
