/**
 * A relay: one replica's link (relay-link.ts: pipelined sends, acks, backoff)
 * and the modes its stream moves between: live records, pull mode for a
 * replica too far behind (logput_window), a snapshot rebuild, retirement when
 * the replica is removed, and the fault hooks that cut or rewind the stream.
 */
import type { NodeStub } from "../node-rpc";
import { RelayLink } from "./relay-link";

export { asAck, type RelayHost } from "./relay-host";

export class Relay extends RelayLink {
  /** The replica told us (by pulling from `lsn + 1`) that it has applied through `lsn`. */
  noteApplied(lsn: number): void {
    if (lsn > this.ackedLsn) this.ackedLsn = lsn;
    this.noteAcked();
  }

  retire(): void {
    this.retired = true;
    this.generation++;
    this.forgetOutstanding();
  }

  /** Fault hook: cut or restore the link; on restore the relay asks where the replica is. */
  setDisconnected(disconnected: boolean): void {
    this.disconnected = disconnected;
    this.generation++;
    this.forgetOutstanding();
    if (disconnected) {
      this.failures++;
      this.lastError = "disconnected by the fault hook";
    } else {
      this.sentLsn = null;
      this.retryAt = null;
      this.pump();
    }
  }

  /** Fault hook: resend from `lsn + 1`, so the replica skips what it already has. */
  rewind(lsn: number): void {
    if (this.sentLsn === null || this.pulling || this.snapshotting) return;
    this.generation++;
    this.sentLsn = Math.max(0, lsn);
    this.forgetOutstanding();
    this.pump();
  }

  startSnapshot(): void {
    this.snapshotting = true;
    this.pulling = false;
    this.generation++;
    this.forgetOutstanding();
  }

  /**
   * The replica installed a snapshot at `lsn`: stream from there. Its position
   * is the snapshot's now, lower than what it acked before when the snapshot
   * is an older one resumed: the rejoin rule, the lease floor and the wait sets
   * must see where it really is.
   */
  finishSnapshot(lsn: number): void {
    this.snapshotting = false;
    this.snapshots++;
    this.generation++;
    this.sentLsn = lsn;
    this.ackedLsn = lsn;
    this.lag.reset(lsn);
    if (lsn > this.highestAckedLsn) this.highestAckedLsn = lsn;
    this.pump();
  }

  abortSnapshot(error: unknown): void {
    this.snapshotting = false;
    this.fail(error, true);
  }

  /** The stub snapshot steps go through, so they keep E-order with appends. */
  get replica(): NodeStub {
    return this.stub;
  }

  /** Enters pull mode: the replica fetches the log itself; heartbeats tell it to. */
  startPulling(): void {
    if (this.pulling) return;
    this.pulling = true;
    this.generation++;
    this.forgetOutstanding();
    this.heartbeatNow();
  }

  /** Leaves pull mode: live records resume after `throughLsn`, which the replica has. */
  resumeLive(throughLsn: number): void {
    if (!this.pulling) return;
    this.pulling = false;
    this.generation++;
    this.sentLsn = throughLsn;
    this.forgetOutstanding();
    this.pump();
  }

  /**
   * Sends a message now if the window allows (a lease to grant, a pull to ask
   * for): a batch if one can go, else a heartbeat, even with a periodic one on
   * its way, which carries the state from before.
   */
  heartbeatNow(): void {
    if (this.retryAt !== null || this.retired || this.disconnected) return;
    if (this.sentSomething(() => this.pump())) return;
    if (this.inFlight < this.host.window()) this.send([], 0, true);
  }

  /** Ends the backoff: the scheduled restart, or a replica that was just started. */
  retryNow(resetBackoff = false): void {
    this.retryAt = null;
    if (resetBackoff) this.backoffMs = 0;
    this.pump();
  }
}
