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
      // A shorter period counts from now, not from a look armed for the old one.
      if (this.failoverMs > 0 && this.armedAt !== null && this.armedAt > now + this.failoverMs) {
        this.arm(now + this.failoverMs);
      }
    }
    if (this.failoverMs > 0 && this.armedAt === null) this.arm(now + this.failoverMs);
  }

  /**
   * Fenced into a later term by a promotion: the master of that term has had
   * no chance to send anything yet, so the silence counts afresh from now (as
   * a Raft node restarts its election timer when it grants a vote). Without
   * it, a member that looked right after the fence, while the new master was
   * still starting, would find the old master's silence and depose the new one.
   */
  newTerm(now: number): void {
    this.lastHeardAt = now;
  }

  silenceMs(now: number): number {
    return now - this.lastHeardAt;
  }

  get periodMs(): number {
    return this.failoverMs;
  }

  /**
   * The alarm fired: whether the master has been silent for the whole period.
   * Re-arms for the next look: at the moment the silence will have lasted the
   * whole period (a period after the last message, not after this look, so a
   * master lost just after a look is noticed one period after its last word,
   * not nearly two), or, after a look that found it silent, a period from now.
   * A random part of half a period comes on top, so replicas that all lost the
   * master do not all start a promotion at once.
   */
  due(now: number): boolean {
    this.armedAt = null;
    if (this.failoverMs === 0) return false;
    const silent = this.silenceMs(now) >= this.failoverMs;
    const next = silent
      ? now + this.failoverMs
      : Math.max(now + 1, this.lastHeardAt + this.failoverMs);
    this.arm(next + Math.floor(Math.random() * (this.failoverMs / 2)));
    return silent;
  }

  private arm(at: number): void {
    this.armedAt = at;
    void this.storage.setAlarm(at);
  }
}
