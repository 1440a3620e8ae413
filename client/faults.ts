/**
 * The fault routes (docs/api.md; docs/operations.md, "Fault routes"): test
 * only, refused with FORBIDDEN unless the tunable debug_fault_injection is on.
 *
 * Those that set a state (stop, start, connect, partition, message faults,
 * ...) are retried like any setting. Those that act once per call (crash the
 * master or a replica, lose the master, tamper with a replica) are sent once
 * unless the call passes `retry`: after a lost answer, a retry would act again.
 */
import type { AdminCall, CallOptions } from "./requester.ts";
import type { MessageFaultConfig } from "./types.ts";

const member = (id: string) => encodeURIComponent(id);

export class FaultClient {
  private readonly call: AdminCall;

  constructor(call: AdminCall) {
    this.call = call;
  }

  /** Resets the master's object now (202); the requests it was serving fail. */
  crashMaster(options: CallOptions = {}): Promise<{ crashed: true }> {
    return this.call("POST", "/master/crash", false, options);
  }

  /** The master is lost (its region gone): it answers nothing until restored (202). */
  loseMaster(options: CallOptions = {}): Promise<{ lost: string }> {
    return this.call("POST", "/master/lose", false, options);
  }

  /** Brings a lost member back; it learns the term from the directory and its peers. */
  restoreMember(id: string, options: CallOptions = {}): Promise<{ restored: string }> {
    return this.call("POST", `/members/${member(id)}/restore`, true, options);
  }

  /** Cuts a member off from the others (false heals); clients still reach it. */
  partitionMember(
    id: string,
    partitioned: boolean,
    options: CallOptions = {},
  ): Promise<{ id: string; partitioned: boolean }> {
    return this.call("POST", `/members/${member(id)}/partition`, true, options, { partitioned });
  }

  stopReplica(id: string, options: CallOptions = {}): Promise<{ id: string; stopped: boolean }> {
    return this.call("POST", `/replicas/${member(id)}/stop`, true, options);
  }

  startReplica(id: string, options: CallOptions = {}): Promise<{ id: string; stopped: boolean }> {
    return this.call("POST", `/replicas/${member(id)}/start`, true, options);
  }

  /** Holds each message to the replica this long before it applies it. */
  delayReplica(
    id: string,
    ms: number,
    options: CallOptions = {},
  ): Promise<{ id: string; delayMs: number }> {
    return this.call("POST", `/replicas/${member(id)}/delay`, true, options, { ms });
  }

  /** Makes the replica's relay resend from `lsn + 1` (the replica skips what it has). */
  rewindReplica(id: string, lsn: number, options: CallOptions = {}): Promise<{ id: string }> {
    return this.call("POST", `/replicas/${member(id)}/rewind`, true, options, { lsn });
  }

  /** Cuts the master's link to the replica (the replica stays up). */
  disconnectReplica(
    id: string,
    options: CallOptions = {},
  ): Promise<{ id: string; disconnected: boolean }> {
    return this.call("POST", `/replicas/${member(id)}/disconnect`, true, options);
  }

  connectReplica(
    id: string,
    options: CallOptions = {},
  ): Promise<{ id: string; disconnected: boolean }> {
    return this.call("POST", `/replicas/${member(id)}/connect`, true, options);
  }

  /** Crashes the replica now, or partway through the next batch it applies (202). */
  crashReplica(
    id: string,
    crash: { midBatch?: boolean } = {},
    options: CallOptions = {},
  ): Promise<{ id: string; midBatch: boolean }> {
    return this.call("POST", `/replicas/${member(id)}/crash`, false, options, crash);
  }

  /**
   * Runs `sql` on the replica behind the log's back, so that it should be found
   * diverged and rebuilt. SQL that SQLite refuses is an InvalidSqlError.
   */
  tamperReplica(
    id: string,
    sql: string,
    options: CallOptions = {},
  ): Promise<{ id: string; tampered: true }> {
    return this.call("POST", `/replicas/${member(id)}/tamper`, false, options, { sql });
  }

  /** Seeded drops, delays, duplicates and reorders of the master's messages; `{}` heals. */
  setMessageFaults(
    faults: Partial<MessageFaultConfig>,
    options: CallOptions = {},
  ): Promise<{ messages: MessageFaultConfig }> {
    return this.call("POST", "/faults", true, options, faults);
  }
}
