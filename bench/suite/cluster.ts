/**
 * Cluster control over the admin API: tunables, status, membership and fault
 * routes, as an operator would use them. Nothing here reaches into the objects.
 */

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

export class ClusterClient {
  readonly url: string;
  readonly name: string;

  constructor(url: string, name: string) {
    this.url = url;
    this.name = name;
  }

  /** An admin call; 503 (a busy or restarting master) is retried for up to 30 s. */
  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const until = Date.now() + 30_000;
    for (;;) {
      const response = await fetch(`${this.url}/admin/clusters/${this.name}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      if (response.ok) return JSON.parse(text) as T;
      if (response.status !== 503 || Date.now() >= until) {
        throw new Error(`${method} ${this.name}${path}: ${response.status} ${text.slice(0, 300)}`);
      }
      await sleep(500);
    }
  }

  status(): Promise<Status> {
    return this.call("GET", "/status");
  }

  tunables(): Promise<
    Record<string, { value: number | boolean | string; default: number | boolean | string }>
  > {
    return this.call("GET", "/tunables");
  }

  patchTunables(patch: TunablePatch): Promise<unknown> {
    return this.call("PATCH", "/tunables", patch);
  }

  async replicaIds(): Promise<string[]> {
    return (await this.call<{ replicas: string[] }>("GET", "/replicas")).replicas;
  }

  addReplica(): Promise<{ id: string }> {
    return this.call("POST", "/replicas");
  }

  removeReplica(id: string): Promise<unknown> {
    return this.call("DELETE", `/replicas/${id}`);
  }

  crashMaster(): Promise<unknown> {
    return this.call("POST", "/master/crash");
  }

  /** Cuts (or restores) the master's link to one replica, as a partition would. */
  setDisconnected(id: string, disconnected: boolean): Promise<unknown> {
    return this.call("POST", `/replicas/${id}/${disconnected ? "disconnect" : "connect"}`);
  }

  verify(): Promise<{ agree: boolean }> {
    return this.call("POST", "/verify");
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
  async promote(body: { replica?: string }): Promise<{ master: string; term: number }> {
    const response = await fetch(`${this.url}/admin/clusters/${this.name}/promote`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`promote ${this.name}: ${response.status} ${text}`);
    return JSON.parse(text) as { master: string; term: number };
  }

  /** Fault route: the master is lost (answers nothing from now on). */
  async loseMaster(): Promise<void> {
    const response = await fetch(`${this.url}/admin/clusters/${this.name}/master/lose`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    });
    if (response.status !== 202)
      throw new Error(`lose: ${response.status} ${await response.text()}`);
  }

  /** Waits until status names a master of at least `term` (automatic promotion). */
  async waitForTerm(term: number, timeoutMs: number): Promise<{ master: string; term: number }> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      try {
        const s = (await this.status()) as Status & { master: { id: string } };
        if (s.master.term >= term) return { master: s.master.id, term: s.master.term };
      } catch {
        // No master answers yet.
      }
      if (Date.now() >= until) throw new Error(`no master of term ${term} within ${timeoutMs} ms`);
      await sleep(50);
    }
  }

  /** A strong read through the data route. */
  async query(sql: string): Promise<Record<string, unknown>[]> {
    const response = await fetch(`${this.url}/v1/clusters/${this.name}/query`, {
      method: "POST",
      headers: { authorization: `Bearer ${DATA_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ sql, replica: "master" }),
    });
    const text = await response.text();
    if (!response.ok)
      throw new Error(`query ${this.name}: ${response.status} ${text.slice(0, 300)}`);
    return (JSON.parse(text) as { rows: Record<string, unknown>[] }).rows;
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
