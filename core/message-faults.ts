/**
 * Message faults for testing: which relay messages are dropped, delayed,
 * duplicated or reordered, decided by a seeded PRNG so that a failing run
 * reproduces from its seed. Pure: the master applies the decisions at the
 * relay's single send point (durable-objects/fault-link.ts).
 *
 * Each link (one replica, one master incarnation) draws from its own PRNG,
 * seeded from (seed, replica, term): the decisions for a link's n-th message
 * depend on the seed alone, not on how messages of other links interleave.
 */

export interface MessageFaultConfig {
  seed: number;
  /** Probability that a message is lost: the request (never delivered) or its reply. */
  drop: number;
  /** Probability that a message is held back between delayMs / 2 and delayMs, in order. */
  delay: number;
  delayMs: number;
  /** Probability that a message is delivered twice (the copy delayMs later, out of order). */
  duplicate: number;
  /** Probability that a message is held back delayMs while later ones overtake it. */
  reorder: number;
}

export type MessageFaultKind = "drop" | "delay" | "duplicate" | "reorder";

export const NO_MESSAGE_FAULTS: MessageFaultConfig = {
  seed: 0,
  drop: 0,
  delay: 0,
  delayMs: 0,
  duplicate: 0,
  reorder: 0,
};

export function faultsActive(config: MessageFaultConfig): boolean {
  return config.drop > 0 || config.delay > 0 || config.duplicate > 0 || config.reorder > 0;
}

/** What happens to one message. */
export interface FaultDecision {
  /** `request`: never delivered; `reply`: delivered, but the answer is lost. */
  drop: "request" | "reply" | null;
  /** Delivered a second time, this long after the first (out of order). */
  duplicateAfterMs: number | null;
  /** Held back this long; later messages wait behind it (in-order delay). */
  delayMs: number;
  /** Held back this long; later messages overtake it. */
  reorderMs: number | null;
}

/** A random number in [0, 1) per call. */
export type Rng = () => number;

/** mulberry32, seeded by a 32-bit hash of the seed and the salts (e.g. replica and term). */
export function createRng(seed: number, ...salt: (string | number)[]): Rng {
  let h = 0x811c9dc5;
  for (const char of [String(seed), ...salt.map(String)].join("\u0000")) {
    h = Math.imul(h ^ (char.codePointAt(0) ?? 0), 0x01000193);
  }
  let state = h >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Decides one message's fate. Always draws the same number of values, so the
 * n-th decision of a link depends only on the seed and the probabilities.
 */
export function decideFault(rng: Rng, config: MessageFaultConfig): FaultDecision {
  const [drop, side, duplicate, delay, amount, reorder] = [
    rng(),
    rng(),
    rng(),
    rng(),
    rng(),
    rng(),
  ] as const;
  const ms = config.delayMs;
  if (drop < config.drop) {
    return {
      drop: side < 0.5 ? "request" : "reply",
      duplicateAfterMs: null,
      delayMs: 0,
      reorderMs: null,
    };
  }
  return {
    drop: null,
    duplicateAfterMs: duplicate < config.duplicate ? ms : null,
    delayMs: delay < config.delay ? Math.round(ms / 2 + (amount * ms) / 2) : 0,
    reorderMs: reorder < config.reorder ? ms : null,
  };
}

/** The kinds of fault a decision injects (for the counters). */
export function faultKinds(decision: FaultDecision): MessageFaultKind[] {
  const kinds: MessageFaultKind[] = [];
  if (decision.drop !== null) kinds.push("drop");
  if (decision.delayMs > 0) kinds.push("delay");
  if (decision.duplicateAfterMs !== null) kinds.push("duplicate");
  if (decision.reorderMs !== null) kinds.push("reorder");
  return kinds;
}

/**
 * The messages a link holds back, and the order they leave in. An in-order
 * item leaves once it is ready and every in-order item before it has left (a
 * delayed message holds up those behind it, as on one connection). An
 * out-of-order item (reordered, or a late duplicate) leaves when it is ready,
 * whatever is before or behind it.
 */
export class LinkQueue<T> {
  private items: { value: T; readyAt: number; inOrder: boolean }[] = [];

  get size(): number {
    return this.items.length;
  }

  push(value: T, readyAt: number, inOrder: boolean): void {
    this.items.push({ value, readyAt, inOrder });
  }

  /** Removes and returns the items that leave at `now`, in the order they leave. */
  due(now: number): T[] {
    const out: T[] = [];
    const keep: typeof this.items = [];
    let blocked = false;
    for (const item of this.items) {
      const ready = item.readyAt <= now;
      if (item.inOrder) {
        if (!blocked && ready) out.push(item.value);
        else {
          blocked = true;
          keep.push(item);
        }
      } else if (ready) out.push(item.value);
      else keep.push(item);
    }
    this.items = keep;
    return out;
  }

  /**
   * When the next item may leave (null when nothing is held): in-order items
   * behind the first one wait for it, so only the first of them counts.
   */
  nextAt(): number | null {
    let next: number | null = null;
    let firstInOrder = true;
    for (const item of this.items) {
      if (item.inOrder && !firstInOrder) continue;
      if (item.inOrder) firstInOrder = false;
      if (next === null || item.readyAt < next) next = item.readyAt;
    }
    return next;
  }
}
