/**
 * The master's test-only fault routes, refused unless the tunable
 * debug_fault_injection is on: crash the master, stop, start, slow, crash or
 * tamper with a replica, cut its link, rewind its relay, and message faults.
 */
import { ApiError, fail, ok, type Result } from "../../core/errors";
import type { MessageFaultConfig } from "../../core/message-faults";
import { MASTER_CRASH_REASON } from "../../core/protocol";
import type { MasterCore } from "./core";
import type { ReplicaEntry } from "./replica-set";

export class MasterFaults {
  constructor(private readonly core: MasterCore) {}

  private requireFaults(): void {
    if (!this.core.tunables.debug_fault_injection) {
      throw new ApiError(
        "FORBIDDEN",
        "fault injection is off: set the tunable debug_fault_injection to true first",
      );
    }
  }

  async crash(cluster: string): Promise<Result<{ crashed: true }>> {
    return this.faultRoute(cluster, async () => {
      // Resets the object now: the requests in flight fail, and this call throws
      // MASTER_CRASH_REASON to its caller (a reset from a timer after the reply
      // could land seconds late under load, after the writes it was meant to hit).
      this.core.ctx.abort(MASTER_CRASH_REASON);
      return { crashed: true as const };
    });
  }

  async setReplicaStopped(
    cluster: string,
    id: string,
    stopped: boolean,
  ): Promise<Result<{ id: string; stopped: boolean }>> {
    return this.faultHook(cluster, id, async (entry) => {
      await this.core.replicaStub(id).setStopped(stopped);
      if (!stopped) entry.relay.retryNow();
      return { id, stopped };
    });
  }

  /** Fault hook: cut or restore the master's link to one replica (no call to it is made). */
  async setReplicaDisconnected(
    cluster: string,
    id: string,
    disconnected: boolean,
  ): Promise<Result<{ id: string; disconnected: boolean }>> {
    return this.faultHook(cluster, id, async (entry) => {
      entry.relay.setDisconnected(disconnected);
      return { id, disconnected };
    });
  }

  /** Fault hook: crash a replica now, or partway through the next batch it applies. */
  async crashReplica(
    cluster: string,
    id: string,
    midBatch: boolean,
  ): Promise<Result<{ id: string; midBatch: boolean }>> {
    return this.faultHook(cluster, id, async () => {
      await this.core.replicaStub(id).crashNode(midBatch);
      this.core.faults.injected.replicaCrash++;
      return { id, midBatch };
    });
  }

  /** Fault hook: drop, delay, duplicate or reorder relay messages (seeded); all 0 heals. */
  async setMessageFaults(
    cluster: string,
    config: MessageFaultConfig,
  ): Promise<Result<{ messages: MessageFaultConfig }>> {
    return this.faultRoute(cluster, () =>
      this.core.configChange(async () => {
        this.core.store.setMeta("message_faults", JSON.stringify(config));
        this.core.faults.configure(config);
        await this.core.publishConfig();
        return { messages: config };
      }),
    );
  }

  async setReplicaDelay(
    cluster: string,
    id: string,
    ms: number,
  ): Promise<Result<{ id: string; delayMs: number }>> {
    return this.faultHook(cluster, id, async () => {
      await this.core.replicaStub(id).setFaultDelay(ms);
      return { id, delayMs: ms };
    });
  }

  /** Fault hook: run SQL on one replica outside the log (it should then diverge). */
  async tamperReplica(
    cluster: string,
    id: string,
    sql: string,
  ): Promise<Result<{ id: string; tampered: true }>> {
    return this.faultHook(cluster, id, async () => {
      await this.core.replicaStub(id).tamper(sql);
      return { id, tampered: true as const };
    });
  }

  /** Fault hook: make a relay resend from `lsn + 1` (its replica skips what it has). */
  async rewindRelay(cluster: string, id: string, lsn: number): Promise<Result<{ id: string }>> {
    return this.faultHook(cluster, id, async (entry) => {
      entry.relay.rewind(lsn);
      return { id };
    });
  }

  /** A fault route: refused unless debug_fault_injection is on; API errors become results. */
  private async faultRoute<T>(cluster: string, act: () => Promise<T>): Promise<Result<T>> {
    try {
      this.core.ensureCluster(cluster);
      this.requireFaults();
      return ok(await act());
    } catch (error) {
      if (error instanceof ApiError) return fail(error);
      throw error;
    }
  }

  /** A fault route aimed at one replica. */
  private faultHook<T>(
    cluster: string,
    id: string,
    act: (entry: ReplicaEntry) => Promise<T>,
  ): Promise<Result<T>> {
    return this.faultRoute(cluster, () => {
      const entry = this.core.replicas.get(id);
      if (entry === undefined) throw new ApiError("NOT_FOUND", `no replica ${id} in ${cluster}`);
      return act(entry);
    });
  }
}
