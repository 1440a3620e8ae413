/**
 * The linearizability search of Wing & Gong with Lowe's improvements, the one
 * Knossos (`knossos.wgl`) and Porcupine (`checker.go`) run. Pure and generic
 * over the model: core/register-model.ts gives it the register.
 *
 * The history is a list of call and return entries in real-time order. The
 * search walks it from the front: a call whose operation the model accepts in
 * the current state is linearized (its call and return entries are lifted out
 * of the list) and the walk restarts at the front; a return entry reached
 * before its call was linearized means that operation should have taken effect
 * already, so the last linearization is undone and the walk moves past it.
 * Lowe's memo of (set of linearized operations, model state) cuts every branch
 * that reaches a configuration already explored: from the same configuration
 * the same futures follow, so a second visit cannot succeed where the first
 * failed. An operation that may take effect at any later point, or never (an
 * unknown outcome), has its return at infinity: it can always be linearized
 * last, which is the same as never for what anyone observed.
 */

export interface SearchOperation {
  /** Where the call sits in the history's real-time order. */
  invoke: number;
  /** Where the return sits; Infinity for an operation that may take effect at any later point. */
  complete: number;
}

export interface SearchModel<Op, State> {
  init: State;
  /** The state after `op` in `state`, or undefined when `op` could not have happened there. */
  step(state: State, op: Op): State | undefined;
  /** A string equal exactly for equal states: the memo's key. */
  stateKey(state: State): string;
}

export type SearchResult =
  /** `order`: indexes into the operations, in an order that satisfies the model and real time. */
  | { outcome: "linearizable"; steps: number; order: number[] }
  /** `longest`: the longest order of operations the search could linearize. */
  | { outcome: "not-linearizable"; steps: number; longest: number[] }
  /** The step cap ran out before the search could decide. */
  | { outcome: "gave-up"; steps: number; longest: number[] };

interface Entry {
  op: number;
  /** A call's return entry; null for a return entry (and the list's head). */
  match: Entry | null;
  prev: Entry | null;
  next: Entry | null;
}

/** Two 32-bit hashes of the set of linearized operations, updated by XOR (Zobrist). */
class LinearizedSet {
  readonly words: Uint32Array;
  private readonly saltA: Uint32Array;
  private readonly saltB: Uint32Array;
  hashA = 0;
  hashB = 0;

  constructor(size: number) {
    this.words = new Uint32Array(Math.ceil(size / 32));
    this.saltA = new Uint32Array(size);
    this.saltB = new Uint32Array(size);
    // A fixed xorshift sequence: the hashes only need to spread, not to be secret.
    let x = 0x9e3779b9;
    const next = () => {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return x >>> 0;
    };
    for (let i = 0; i < size; i++) {
      this.saltA[i] = next();
      this.saltB[i] = next();
    }
  }

  flip(op: number): void {
    this.words[op >>> 5] = (this.words[op >>> 5] ?? 0) ^ (1 << (op & 31));
    this.hashA ^= this.saltA[op] ?? 0;
    this.hashB ^= this.saltB[op] ?? 0;
  }
}

function sameWords(a: Uint32Array, b: Uint32Array): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Entries in real-time order behind a head sentinel; at equal positions calls come first. */
function linkEntries(ops: readonly SearchOperation[]): Entry {
  const points: { at: number; isCall: boolean; op: number }[] = [];
  ops.forEach((op, i) => {
    points.push({ at: op.invoke, isCall: true, op: i });
    points.push({ at: op.complete, isCall: false, op: i });
  });
  // Calls before returns at one position: operations that touch are taken as concurrent,
  // the permissive reading (Porcupine's).
  points.sort((a, b) => a.at - b.at || Number(a.isCall ? 0 : 1) - Number(b.isCall ? 0 : 1));
  const returns = new Map<number, Entry>();
  const entries = points.map((point) => {
    const entry: Entry = { op: point.op, match: null, prev: null, next: null };
    if (!point.isCall) returns.set(point.op, entry);
    return { entry, isCall: point.isCall };
  });
  const head: Entry = { op: -1, match: null, prev: null, next: null };
  let last = head;
  for (const { entry, isCall } of entries) {
    if (isCall) entry.match = returns.get(entry.op) ?? null;
    entry.prev = last;
    last.next = entry;
    last = entry;
  }
  return head;
}

/** Takes a call and its return out of the list (they stay linked to their old neighbours). */
function lift(call: Entry): void {
  const ret = call.match as Entry;
  (call.prev as Entry).next = call.next;
  if (call.next !== null) call.next.prev = call.prev;
  (ret.prev as Entry).next = ret.next;
  if (ret.next !== null) ret.next.prev = ret.prev;
}

/** Puts them back, in the reverse order of lift. */
function unlift(call: Entry): void {
  const ret = call.match as Entry;
  (ret.prev as Entry).next = ret;
  if (ret.next !== null) ret.next.prev = ret;
  (call.prev as Entry).next = call;
  if (call.next !== null) call.next.prev = call;
}

/**
 * Searches for a linearization of `ops` under `model`, giving up after `maxSteps`
 * iterations (each tries one entry): the search is exponential in the worst case.
 */
export function searchLinearization<Op extends SearchOperation, State>(
  ops: readonly Op[],
  model: SearchModel<Op, State>,
  maxSteps: number,
): SearchResult {
  const head = linkEntries(ops);
  const linearized = new LinearizedSet(ops.length);
  const seen = new Map<string, Uint32Array[]>();
  const calls: { entry: Entry; state: State }[] = [];
  let longest: number[] = [];
  let state = model.init;
  let entry = head.next;
  let steps = 0;
  while (head.next !== null && entry !== null) {
    if (++steps > maxSteps) return { outcome: "gave-up", steps: steps - 1, longest };
    if (entry.match !== null) {
      const next = model.step(state, ops[entry.op] as Op);
      if (next !== undefined) {
        linearized.flip(entry.op);
        const key = `${linearized.hashA}:${linearized.hashB}:${model.stateKey(next)}`;
        const bucket = seen.get(key);
        if (bucket === undefined || !bucket.some((words) => sameWords(words, linearized.words))) {
          if (bucket === undefined) seen.set(key, [linearized.words.slice()]);
          else bucket.push(linearized.words.slice());
          calls.push({ entry, state });
          if (calls.length > longest.length) longest = calls.map((c) => c.entry.op);
          state = next;
          lift(entry);
          entry = head.next;
          continue;
        }
        linearized.flip(entry.op);
      }
      entry = entry.next;
      continue;
    }
    // A return whose call is not linearized: that operation had to take effect by now.
    const top = calls.pop();
    if (top === undefined) return { outcome: "not-linearizable", steps, longest };
    state = top.state;
    linearized.flip(top.entry.op);
    unlift(top.entry);
    entry = top.entry.next;
  }
  return { outcome: "linearizable", steps, order: calls.map((c) => c.entry.op) };
}
