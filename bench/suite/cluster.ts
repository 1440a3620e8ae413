/**
 * Cluster control over the admin API, through the typed client (client/):
 * tunables, status, membership and fault routes, as an operator would use
 * them. Nothing here reaches into the objects.
 */
import { type AdminClient, DosqliteClient, type RetryPolicy } from "../../client/index.ts";

export const ADMIN_TOKEN = "dev-admin-token";
export const DATA_TOKEN = "dev-data-token";

export type TunablePatch = Record<string, number | boolean | string>;

/** The part of GET /admin/clusters/{c}/status the benchmark reads. */
export interface Status {
  master: {
    lsn: number;
    term: number;
    epoch: number;
    logRows: number;
    logBytes: number;
    databaseBytes: number;
    truncatedThrough: number;
    waiter: {
      inlineWaits: { off: number; queueFull: number; notPlain: number };
      handedOff: number;
      peakOutstanding: number;
      passes: number;
      checked: number;
      answered: number;
      skippedEarlyStop: number;
    };
  };
  replicas: ReplicaStatus[];
}

export interface ReplicaStatus {
  id: string;
  state: string;
  incoherentReason: string | null;
  ackedLsn: number;
  bytesBehind: number;
  ackRttCount: number;
  ackRttTotalMs: number;
  ackDelayTotalMs: number;
  pullBatches: number;
  snapshots: number;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Admin calls wait out a busy or restarting master: every half second for up
 * to 30 s, whatever the call (adding a replica and crashing the master too).
 */
const ADMIN_RETRY: Partial<RetryPolicy> = {
  maxAttempts: Number.POSITIVE_INFINITY,
  deadlineMs: 30_000,
  baseDelayMs: 500,
  maxDelayMs: 500,
  jitter: "none",
  honourRetryAfter: false,
};
const retry = { retry: ADMIN_RETRY };

export class ClusterClient {
  readonly url: string;
  readonly name: string;
  /** The cluster's data plane (the development data token). */
  readonly data: DosqliteClient;
  readonly admin: AdminClient;

  constructor(url: string, name: string) {
    this.url = url;
    this.name = name;
    this.data = new DosqliteClient({ url, cluster: name, token: DATA_TOKEN });
    this.admin = new DosqliteClient({ url, cluster: name, adminToken: ADMIN_TOKEN }).admin;
  }

  status(): Promise<Status> {
    return this.admin.status(retry);
  }

  tunables(): Promise<
    Record<string, { value: number | boolean | string; default: number | boolean | string }>
  > {
    return this.admin.tunables(retry);
  }

  patchTunables(patch: TunablePatch): Promise<unknown> {
    return this.admin.patchTunables(patch, retry);
  }

  async replicaIds(): Promise<string[]> {
    return (await this.admin.replicas(retry)).replicas;
  }

  addReplica(): Promise<{ id: string }> {
    return this.admin.addReplica({}, retry);
  }

  removeReplica(id: string): Promise<unknown> {
    return this.admin.removeReplica(id, retry);
  }

  crashMaster(): Promise<unknown> {
    return this.admin.faults.crashMaster(retry);
  }

  /** Cuts (or restores) the master's link to one replica, as a partition would. */
  setDisconnected(id: string, disconnected: boolean): Promise<unknown> {
    return disconnected
      ? this.admin.faults.disconnectReplica(id, retry)
      : this.admin.faults.connectReplica(id, retry);
  }

  verify(): Promise<{ agree: boolean }> {
    return this.admin.verify(retry);
  }

  /** Adds or removes replicas (newest first) until the cluster has `count`. */
  async setReplicaCount(count: number): Promise<void> {
    let ids = await this.replicaIds();
    while (ids.length > count) {
      const last = ids[ids.length - 1];
      if (last === undefined) break;
      await this.removeReplica(last);
      ids = await this.replicaIds();
    }
    while (ids.length < count) {
      await this.addReplica();
      ids = await this.replicaIds();
    }
  }

  /** POST …/promote: the new master and its term (a refusal throws, it is not retried). */
  promote(body: { replica?: string }): Promise<{ master: string; term: number }> {
    return this.admin.promote(body);
  }

  /** Fault route: the master is lost (answers nothing from now on). */
  async loseMaster(): Promise<void> {
    await this.admin.faults.loseMaster();
  }

  /** Waits until status names a master of at least `term` (automatic promotion). */
  async waitForTerm(term: number, timeoutMs: number): Promise<{ master: string; term: number }> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      try {
        const s = await this.admin.status(retry);
        if (s.master.term >= term) return { master: s.master.id, term: s.master.term };
      } catch {
        // No master answers yet.
      }
      if (Date.now() >= until) throw new Error(`no master of term ${term} within ${timeoutMs} ms`);
      await sleep(50);
    }
  }

  /** A read on the master through the data route (one attempt). */
  async query(sql: string): Promise<Record<string, unknown>[]> {
    return (await this.data.query(sql, [], { replica: "master", retry: false })).rows;
  }

  /** Waits until every replica is coherent; returns the ids still not coherent at the deadline. */
  async waitCoherent(timeoutMs: number): Promise<string[]> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const lagging = (await this.status()).replicas.filter((r) => r.state !== "coherent");
      if (lagging.length === 0 || Date.now() >= until) return lagging.map((r) => r.id);
      await sleep(200);
    }
  }
}

/** Commit-path counters over a run: the difference of two status reads. */
export interface StatusDelta {
  /** Mean time replicas held each ack on purpose (debug_ack_delay_ms as it really was). */
  ackHeldMs: number;
  /** Mean batch round trip the master measured. */
  ackRttMs: number;
  inlineWaits: { off: number; queueFull: number; notPlain: number };
  passes: number;
  checkedPerPass: number;
  answeredPerPass: number;
  skippedEarlyStop: number;
  peakOutstanding: number;
}

export function statusDelta(before: Status, after: Status): StatusDelta {
  const sum = (s: Status, k: "ackRttCount" | "ackRttTotalMs" | "ackDelayTotalMs") =>
    s.replicas.reduce((acc, r) => acc + r[k], 0);
  const count = sum(after, "ackRttCount") - sum(before, "ackRttCount");
  const rtt = sum(after, "ackRttTotalMs") - sum(before, "ackRttTotalMs");
  const held = sum(after, "ackDelayTotalMs") - sum(before, "ackDelayTotalMs");
  const w0 = before.master.waiter;
  const w1 = after.master.waiter;
  const passes = w1.passes - w0.passes;
  const per = (n: number) => (passes === 0 ? 0 : n / passes);
  return {
    ackHeldMs: count <= 0 ? 0 : held / count,
    ackRttMs: count <= 0 ? 0 : rtt / count,
    inlineWaits: {
      off: w1.inlineWaits.off - w0.inlineWaits.off,
      queueFull: w1.inlineWaits.queueFull - w0.inlineWaits.queueFull,
      notPlain: w1.inlineWaits.notPlain - w0.inlineWaits.notPlain,
    },
    passes,
    checkedPerPass: per(w1.checked - w0.checked),
    answeredPerPass: per(w1.answered - w0.answered),
    skippedEarlyStop: w1.skippedEarlyStop - w0.skippedEarlyStop,
    peakOutstanding: w1.peakOutstanding,
  };
}
