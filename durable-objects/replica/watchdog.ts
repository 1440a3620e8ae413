/**
 * Automatic promotion, the replica's part (master_failover_ms): every message
 * from the master resets the silence; while the setting is on, one DO alarm
 * per period looks at it. The setting comes with every message, and is kept in
 * storage, since after a restart the master may never send another.
 */
import type { ReplicaSettings } from "../../core/protocol";

export class FailoverWatchdog {
  private lastHeardAt = Date.now();
  private failoverMs: number;
  private armedAt: number | null = null;

  constructor(private readonly storage: DurableObjectStorage) {
    this.failoverMs = Number(storage.kv.get<string>("m:failover_ms") ?? 0);
    if (this.failoverMs > 0) this.arm(Date.now() + this.failoverMs);
  }

  /** A message of the current term from the master. */
  heard(settings: ReplicaSettings, now: number): void {
    this.lastHeardAt = now;
    if (settings.masterFailoverMs !== this.failoverMs) {
      this.failoverMs = settings.masterFailoverMs;
      this.storage.kv.put("m:failover_ms", String(this.failoverMs));
    }
    if (this.failoverMs > 0 && this.armedAt === null) this.arm(now + this.failoverMs);
  }

  silenceMs(now: number): number {
    return now - this.lastHeardAt;
  }

  get periodMs(): number {
    return this.failoverMs;
  }

  /**
   * The alarm fired: whether the master has been silent for the whole period.
   * Re-arms for the next look, a random part of a period later, so replicas
   * that all lost the master do not all start a promotion at once.
   */
  due(now: number): boolean {
    this.armedAt = null;
    if (this.failoverMs === 0) return false;
    const silent = this.silenceMs(now) >= this.failoverMs;
    const next = Math.max(now, this.lastHeardAt) + this.failoverMs;
    this.arm(next + Math.floor(Math.random() * (this.failoverMs / 2)));
    return silent;
  }

  private arm(at: number): void {
    this.armedAt = at;
    void this.storage.setAlarm(at);
  }
}
