/**
 * A register history in the shape Jepsen's tools read (Knossos, Elle,
 * Porcupine's Jepsen loader): a JSON array of events, its recorder, and its
 * reading into the operations core/linearizability.ts checks. Pure.
 *
 *   {"index": 7, "type": "invoke", "process": 3, "f": "cas", "key": "r1", "value": [4, 9], "time": 1250000000}
 *   {"index": 9, "type": "ok", "process": 3, "f": "cas", "key": "r1", "value": [4, 9], "time": 1262000000}
 *
 * Events are in the order they happened; `index` is the position. Each
 * operation is an `invoke` followed by one completion from the same process:
 * `ok` (it happened), `fail` (it did not) or `info` (unknown; a client that
 * gives up on an operation goes on as a new process, `process + clients`, as in
 * Jepsen, so no process ever has two operations open). `value`: for `write`
 * the value written; for `cas` `[expected, new]`; for `read` null on the
 * invocation and the value read on `ok` (null when the key has none). A cas
 * `fail` without `error` ran and found a value other than `expected`; a `fail`
 * with `error` was refused and did nothing. `time` is in nanoseconds since the
 * history began, at millisecond resolution; order by `index`, not `time`.
 * Reads carry `node` (who served them), failures and unknowns `error`.
 */
import type { Outcome, RegisterOperation, RegisterValue } from "./register-model";

export type RegisterF = "read" | "write" | "cas";
type CallValue = RegisterValue | readonly [RegisterValue, RegisterValue];

export interface RegisterHistoryEvent {
  index: number;
  type: "invoke" | Outcome;
  process: number;
  f: RegisterF;
  key: string;
  value: CallValue;
  /** Nanoseconds since the history began. */
  time: number;
  error?: string;
  node?: string;
}

/** An invoked operation, waiting for its completion. */
export interface OpenOperation {
  readonly index: number;
  readonly client: number;
  readonly process: number;
  readonly f: RegisterF;
  readonly key: string;
  readonly value: CallValue;
}

/** Records events in the order they happen, on the caller's clock (milliseconds). */
export class RegisterHistory {
  readonly events: RegisterHistoryEvent[] = [];
  private readonly processes: number[];
  private readonly open = new Set<number>();
  private readonly started: number;

  constructor(
    private readonly clients: number,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.started = now();
    this.processes = Array.from({ length: clients }, (_, i) => i);
  }

  invoke(
    client: number,
    call: { f: RegisterF; key: string; value: CallValue },
    node?: string,
  ): OpenOperation {
    const process = this.processes[client];
    if (process === undefined) throw new Error(`client ${client} is not one of ${this.clients}`);
    if (this.open.has(process)) throw new Error(`process ${process} already has an operation`);
    this.open.add(process);
    const op = { index: this.events.length, client, process, ...call };
    this.push({ type: "invoke", process, ...call, ...(node === undefined ? {} : { node }) });
    return op;
  }

  /** It happened; a read passes the value it returned. */
  ok(op: OpenOperation, read?: { value: RegisterValue; node?: string }): void {
    this.complete(op, "ok", read === undefined ? {} : read);
  }

  /** It did not happen (with `error`), or, for a cas without one, it found another value. */
  fail(op: OpenOperation, error?: string): void {
    this.complete(op, "fail", error === undefined ? {} : { error });
  }

  /** Its outcome is unknown: the client goes on as a new process. */
  info(op: OpenOperation, error: string): void {
    this.complete(op, "info", { error });
    this.processes[op.client] = op.process + this.clients;
  }

  private complete(
    op: OpenOperation,
    type: Outcome,
    extra: { value?: RegisterValue; node?: string; error?: string },
  ): void {
    if (!this.open.delete(op.process)) throw new Error(`process ${op.process} has no operation`);
    const { value = op.value, ...rest } = extra;
    this.push({ type, process: op.process, f: op.f, key: op.key, value, ...rest });
  }

  private push(event: Omit<RegisterHistoryEvent, "index" | "time">): void {
    const time = Math.round((this.now() - this.started) * 1e6);
    this.events.push({ index: this.events.length, ...event, time });
  }
}

const isValue = (v: unknown): v is RegisterValue =>
  v === null || typeof v === "string" || (typeof v === "number" && Number.isFinite(v));

/** Validates a parsed JSON history (from a file); throws naming the first bad event. */
export function parseHistory(json: unknown): RegisterHistoryEvent[] {
  if (!Array.isArray(json)) throw new Error("a history is a JSON array of events");
  return json.map((raw: unknown, i) => {
    const e = raw as Partial<Record<keyof RegisterHistoryEvent, unknown>>;
    const bad = (what: string) => new Error(`event ${i}: ${what}: ${JSON.stringify(raw)}`);
    if (typeof raw !== "object" || raw === null) throw bad("not an object");
    if (typeof e.index !== "number") throw bad("index is not a number");
    if (!["invoke", "ok", "fail", "info"].includes(e.type as string)) throw bad("bad type");
    if (!Number.isInteger(e.process)) throw bad("process is not an integer");
    if (!["read", "write", "cas"].includes(e.f as string)) throw bad("bad f");
    if (typeof e.key !== "string") throw bad("key is not a string");
    if (typeof e.time !== "number") throw bad("time is not a number");
    const pair = Array.isArray(e.value) && e.value.length === 2 && e.value.every(isValue);
    if (e.f === "cas" ? !pair : !isValue(e.value)) throw bad("bad value");
    if (e.error !== undefined && typeof e.error !== "string") throw bad("error is not a string");
    if (e.node !== undefined && typeof e.node !== "string") throw bad("node is not a string");
    return e as RegisterHistoryEvent;
  });
}

/**
 * Pairs each invocation with its process's completion. An invocation still open
 * when the history ends is unknown (info), as in Jepsen.
 */
export function operationsFromHistory(
  events: readonly RegisterHistoryEvent[],
): RegisterOperation[] {
  const open = new Map<number, RegisterHistoryEvent>();
  const ops: RegisterOperation[] = [];
  let last = Number.NEGATIVE_INFINITY;
  const finish = (call: RegisterHistoryEvent, done: RegisterHistoryEvent | null) => {
    const outcome: Outcome = done === null ? "info" : (done.type as Outcome);
    const completed = done !== null && outcome !== "info";
    const error = done === null ? "still running when the history ended" : done.error;
    const node = done?.node ?? call.node;
    const fields = {
      id: call.index,
      process: call.process,
      key: call.key,
      outcome,
      invoke: call.index,
      complete: completed ? done.index : null,
      invokeMs: call.time / 1e6,
      ...(completed ? { completeMs: done.time / 1e6 } : {}),
      ...(error === undefined ? {} : { error }),
      ...(node === undefined ? {} : { node }),
    };
    if (call.f === "cas") {
      ops.push({ ...fields, f: "cas", value: call.value as [RegisterValue, RegisterValue] });
    } else if (call.f === "write") {
      ops.push({ ...fields, f: "write", value: call.value as RegisterValue });
    } else {
      const read = outcome === "ok" ? (done?.value as RegisterValue) : null;
      ops.push({ ...fields, f: "read", value: read });
    }
  };
  for (const event of events) {
    if (!(event.index > last)) throw new Error(`event ${event.index} is out of order`);
    last = event.index;
    const call = open.get(event.process);
    if (event.type === "invoke") {
      if (call !== undefined) {
        throw new Error(`process ${event.process} invoked ${event.index} with ${call.index} open`);
      }
      open.set(event.process, event);
      continue;
    }
    if (call === undefined || call.f !== event.f || call.key !== event.key) {
      throw new Error(`event ${event.index} completes no open ${event.f} of ${event.key}`);
    }
    open.delete(event.process);
    finish(call, event);
  }
  for (const call of open.values()) finish(call, null);
  return ops.sort((a, b) => a.invoke - b.invoke);
}
