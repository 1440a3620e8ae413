/**
 * Test-only message faults on the master's links to its replicas: the relay's
 * one send point calls `append` here, which drops, delays, duplicates or
 * reorders the message as core/message-faults.ts decides. A lost request or a
 * lost reply looks to the relay like a failed call: it makes a new stub, backs
 * off and resends from where the replica is (the replica skips what it has and
 * answers `gap` when a message arrives ahead of it). With no fault configured,
 * or debug_fault_injection off, a message goes straight to the stub.
 *
 * Apart from the faults, debug_link_delay_ms makes every call a link of that
 * round trip: the request leaves half of it later and the reply comes back
 * half of it after the replica answered, in order on each link (equal timers
 * fire in the order they were set), and the replica does what it would.
 */
import {
  createRng,
  decideFault,
  type FaultDecision,
  faultKinds,
  faultsActive,
  LinkQueue,
  type MessageFaultConfig,
  type MessageFaultKind,
  NO_MESSAGE_FAULTS,
  type Rng,
} from "../../core/message-faults";
import type { AppendRequest, AppendResponse } from "../../core/protocol";
import type { NodeStub } from "../node-rpc";

type ReplicaStub = NodeStub;

/** Messages a link holds back, with one timer for the earliest. */
interface Link {
  queue: LinkQueue<() => void>;
  timer: ReturnType<typeof setTimeout> | null;
  timerAt: number;
}

export type FaultCounts = Record<MessageFaultKind | "replicaCrash", number>;

export class MessageFaults {
  private config: MessageFaultConfig = NO_MESSAGE_FAULTS;
  private readonly rngs = new Map<string, Rng>();
  /** Keyed by stub: a new stub is a new connection, not held up by the old one's messages. */
  private readonly links = new WeakMap<ReplicaStub, Link>();
  readonly injected: FaultCounts = { drop: 0, delay: 0, duplicate: 0, reorder: 0, replicaCrash: 0 };

  constructor(
    private readonly enabled: () => boolean,
    private readonly term: () => number,
    private readonly linkDelayMs: () => number = () => 0,
  ) {}

  get current(): MessageFaultConfig {
    return this.config;
  }

  /** New settings; every link's decisions start again from the seed. */
  configure(config: MessageFaultConfig): void {
    this.config = config;
    this.rngs.clear();
  }

  append(id: string, stub: ReplicaStub, request: AppendRequest): Promise<AppendResponse> {
    const delayMs = this.linkDelayMs();
    if (delayMs > 0) return delayedCall(delayMs, () => this.faulty(id, stub, request));
    return this.faulty(id, stub, request);
  }

  private faulty(id: string, stub: ReplicaStub, request: AppendRequest): Promise<AppendResponse> {
    if (!this.enabled() || !faultsActive(this.config)) return call(stub, request);
    const decision = this.decide(id);
    if (decision.drop === "request") {
      return Promise.reject(new Error(`message to ${id} dropped by the fault injector`));
    }
    return new Promise((resolve, reject) => {
      const deliver = () =>
        call(stub, request).then((response) => {
          if (decision.drop === "reply") {
            reject(new Error(`reply from ${id} dropped by the fault injector`));
          } else resolve(response);
        }, reject);
      this.hold(stub, request, deliver, decision);
    });
  }

  private decide(id: string): FaultDecision {
    let rng = this.rngs.get(id);
    if (rng === undefined) {
      rng = createRng(this.config.seed, id, this.term());
      this.rngs.set(id, rng);
    }
    const decision = decideFault(rng, this.config);
    for (const kind of faultKinds(decision)) this.injected[kind]++;
    return decision;
  }

  private hold(
    stub: ReplicaStub,
    request: AppendRequest,
    deliver: () => void,
    decision: FaultDecision,
  ): void {
    let link = this.links.get(stub);
    if (link === undefined) {
      link = { queue: new LinkQueue(), timer: null, timerAt: 0 };
      this.links.set(stub, link);
    }
    const now = Date.now();
    if (decision.reorderMs !== null) link.queue.push(deliver, now + decision.reorderMs, false);
    else link.queue.push(deliver, now + decision.delayMs, true);
    if (decision.duplicateAfterMs !== null) {
      // The copy's reply goes nowhere: the relay already has one for this message.
      const copy = () => void call(stub, request).catch(() => {});
      link.queue.push(copy, now + decision.duplicateAfterMs, false);
    }
    this.flush(link);
  }

  private flush(link: Link): void {
    for (const deliver of link.queue.due(Date.now())) deliver();
    const next = link.queue.nextAt();
    if (next === null || (link.timer !== null && link.timerAt <= next)) return;
    if (link.timer !== null) clearTimeout(link.timer);
    link.timerAt = next;
    link.timer = setTimeout(
      () => {
        link.timer = null;
        this.flush(link);
      },
      Math.max(0, next - Date.now()),
    );
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A call over a link of round trip `ms`: half of it out, half of it back. */
async function delayedCall<T>(ms: number, send: () => Promise<T>): Promise<T> {
  await sleep(ms / 2);
  const outcome = await send().then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  await sleep(ms / 2);
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

function call(stub: ReplicaStub, request: AppendRequest): Promise<AppendResponse> {
  try {
    return stub.append(request) as Promise<AppendResponse>;
  } catch (error) {
    // A broken stub (the link already failed) may throw rather than reject.
    return Promise.reject(error);
  }
}
