/**
 * The master's admin side: status, metrics, tunables (all or nothing, persisted,
 * carried to replicas on the next message), verify, and membership (a replica
 * added starts incoherent and is bootstrapped from a snapshot; one removed
 * leaves the wait sets like any incoherent one).
 */
import { ApiError, fail, ok, type Result } from "../../core/errors";
import type { LocationHint } from "../../core/placement";
import { replicaId } from "../../core/protocol";
import type { ClusterStatus, PlacedReplica } from "../../core/status";
import {
  applyPatch,
  describeTunables,
  type TunableDescription,
  type TunableName,
} from "../../core/tunables";
import { compareChecksums, type VerifyReport } from "../../core/verify";
import { nodeChecksums } from "../sqlite/checksums";
import type { MasterCore } from "./core";
import { membershipRefusal } from "./config";
import { Relay } from "./relay";
import { replicaStatuses } from "./replica-status";
import { emptyProgress } from "./snapshot-stream";

export class MasterAdmin {
  constructor(private readonly core: MasterCore) {}

  async status(cluster: string): Promise<ClusterStatus> {
    this.core.ensureCluster(cluster);
    // Written before the answer leaves: an acked LSN once reported is never reported lower.
    this.core.ackedMemory.save();
    const now = Date.now();
    const locations = this.core.locations();
    const replicas = replicaStatuses(this.core.replicas, now).map((status) => ({
      ...status,
      location: locations[status.id] ?? null,
      snapshot: this.core.snapshotProgress.get(status.id) ?? emptyProgress(),
    }));
    const truncatedOffset = Number(this.core.store.getMeta("truncated_offset") ?? 0);
    const log = {
      rows: this.core.lsn - this.core.truncatedThrough,
      bytes: this.core.logEnd - truncatedOffset,
    };
    return {
      cluster: this.core.cluster,
      master: {
        lsn: this.core.lsn,
        id: this.core.self,
        location: locations[this.core.self] ?? null,
        term: this.core.term,
        epoch: this.core.epoch,
        writersBusy: this.core.writers.busy,
        writersQueued: this.core.writers.queued,
        waiter: {
          outstanding: this.core.waiter.outstanding,
          handedOffNow: this.core.waiter.handedOffNow,
          peakOutstanding: this.core.waiter.peak,
          passes: this.core.waiter.passes,
          checked: this.core.waiter.checked,
          answered: this.core.waiter.answered,
          comparisons: this.core.waiter.comparisons,
          skippedEarlyStop: this.core.waiter.skippedEarlyStop,
          noWait: this.core.counters.noWait,
          handedOff: this.core.counters.handedOff,
          inlineWaits: { ...this.core.counters.inlineWaits },
        },
        commits: this.core.counters.commits,
        replayed: this.core.counters.replayed,
        logRows: log.rows,
        logBytes: log.bytes,
        // The master's whole SQLite file: user tables, the log and every internal table.
        databaseBytes: this.core.ctx.storage.sql.databaseSize,
        truncatedThrough: this.core.truncatedThrough,
        ...this.core.strongReads.status(),
        idle: this.core.idle.status(now),
      },
      replicas,
      faults: { messages: this.core.faults.current, injected: { ...this.core.faults.injected } },
    };
  }

  async metricsText(cluster: string): Promise<string> {
    this.core.ensureCluster(cluster);
    this.core.ackedMemory.save();
    return this.core.metrics.render();
  }

  async getTunables(cluster: string): Promise<Record<TunableName, TunableDescription>> {
    this.core.ensureCluster(cluster);
    return describeTunables(this.core.tunables);
  }

  patchTunables(
    cluster: string,
    patch: unknown,
  ): Promise<Result<Record<TunableName, TunableDescription>>> {
    return this.core.configChange(() => this.patchTunablesNow(cluster, patch));
  }

  private async patchTunablesNow(
    cluster: string,
    patch: unknown,
  ): Promise<Result<Record<TunableName, TunableDescription>>> {
    try {
      this.core.ensureCluster(cluster);
      const refused = this.core.writeRefusal();
      if (refused !== null) throw refused;
      const { next, changed } = applyPatch(this.core.tunables, patch);
      const values: Record<string, unknown> = {};
      for (const name of changed) values[name] = next[name];
      const from = this.core.tunables.sync_mode;
      // The lease length in effect until now stays on record (leases granted at it
      // may run), and a longer one is published before any lease of that length
      // goes out: a promotion without this master must wait for it.
      const longest = this.core.maxLeaseMs();
      if (next.coherency_lease_ms > longest) {
        this.core.store.setMeta("max_lease_ms", String(next.coherency_lease_ms));
        await this.core.publishConfig();
      }
      await this.core.modeSwitch.before(from, next.sync_mode);
      this.core.ctx.storage.transactionSync(() => this.core.store.saveTunables(values));
      this.core.tunables = next;
      this.core.writers.setLimit(next.writer_concurrency);
      this.core.modeSwitch.after(from, next.sync_mode);
      // Periodic jobs take a changed period from now, not after the old one runs out.
      const now = Date.now();
      if (changed.includes("heartbeat_ms"))
        this.core.jobs.at("heartbeat", now + this.core.heartbeatEvery());
      if (changed.includes("idempotency_retention_ms")) {
        this.core.jobs.at("prune", now + this.core.pruneEvery());
      }
      // A waiting commit may be decided by the new values (durable_lsns off: no
      // majority to wait for); no ack may come to make the pass that sees it.
      this.core.waiter.requestPass();
      // Replicas read their settings from every message: a heartbeat carries the change now.
      for (const entry of this.core.replicas.all()) entry.relay.heartbeatIfDue();
      // A promotion without this master takes the tunables from the directory.
      await this.core.publishConfig();
      return ok(describeTunables(next));
    } catch (error) {
      if (error instanceof ApiError) return fail(error);
      throw error;
    }
  }

  async verify(cluster: string): Promise<VerifyReport> {
    this.core.ensureCluster(cluster);
    const lsn = this.core.lsn;
    const mine = nodeChecksums(this.core.node, "master", lsn);
    const others = await Promise.all(
      this.core.replicas.ids().map(async (id) => {
        try {
          return await this.core.replicaStub(id).checksums(id, lsn, 10_000);
        } catch (error) {
          return { node: id, error: error instanceof Error ? error.message : String(error) };
        }
      }),
    );
    return compareChecksums(mine, others);
  }

  /**
   * Adds a replica to the sanctioned set (ids are never reused). It starts
   * incoherent and is bootstrapped from a snapshot, then rejoins once caught up.
   */
  addReplica(
    cluster: string,
    location: LocationHint | null = null,
  ): Promise<Result<{ id: string; location: LocationHint | null; replicas: string[] }>> {
    return this.core.configChange(() => this.addReplicaNow(cluster, location));
  }

  private async addReplicaNow(
    cluster: string,
    location: LocationHint | null,
  ): Promise<Result<{ id: string; location: LocationHint | null; replicas: string[] }>> {
    try {
      this.core.ensureCluster(cluster);
      const refused = this.core.writeRefusal();
      if (refused !== null) throw refused;
      const next = Number(this.core.store.getMeta("next_replica") ?? "1");
      const id = replicaId(next);
      const after = [...this.core.replicas.ids(), id];
      const unsafe = membershipRefusal(
        this.core.tunables,
        this.core.answeredHighLsn,
        after.map((r) => this.core.replicas.get(r)?.relay.ackedLsn ?? 0),
      );
      if (unsafe !== null) throw unsafe;
      const locations = { ...this.core.locations() };
      if (location !== null) locations[id] = location;
      // In the directory first: a promotion without this master must count it.
      await this.core.publishConfig(after, next + 1, locations);
      this.core.ctx.storage.transactionSync(() => {
        this.core.store.saveReplicaState(id, "incoherent", "new");
        this.core.store.setMeta("next_replica", String(next + 1));
        this.core.store.setMeta("locations", JSON.stringify(locations));
      });
      this.core.replicas.add(id, "incoherent", "new", new Relay(id, this.core.relayHost), 0);
      if (this.core.lsn > 0) this.core.requestSnapshot(id);
      else this.core.replicas.get(id)?.relay.pump();
      return ok({ id, location, replicas: this.core.replicas.ids() });
    } catch (error) {
      if (error instanceof ApiError) return fail(error);
      throw error;
    }
  }

  /**
   * Removes a replica from the sanctioned set at once. Commits already waiting
   * keep the wait set they started with; the removed replica leaves it like any
   * incoherent one, once the lease it may hold has expired.
   */
  removeReplica(cluster: string, id: string): Promise<Result<{ id: string; replicas: string[] }>> {
    return this.core.configChange(() => this.removeReplicaNow(cluster, id));
  }

  private async removeReplicaNow(
    cluster: string,
    id: string,
  ): Promise<Result<{ id: string; replicas: string[] }>> {
    try {
      this.core.ensureCluster(cluster);
      const entry = this.core.replicas.get(id);
      if (entry === undefined) throw new ApiError("NOT_FOUND", `no replica ${id} in ${cluster}`);
      const refused = this.core.writeRefusal();
      if (refused !== null) throw refused;
      const after = this.core.replicas.ids().filter((r) => r !== id);
      const unsafe = membershipRefusal(
        this.core.tunables,
        this.core.answeredHighLsn,
        after.map((r) => this.core.replicas.get(r)?.relay.ackedLsn ?? 0),
      );
      if (unsafe !== null) throw unsafe;
      const { [id]: _gone, ...locations } = this.core.locations();
      // Out of the directory first: a promotion without this master must not count it.
      await this.core.publishConfig(after, undefined, locations);
      this.core.store.setMeta("locations", JSON.stringify(locations));
      this.core.replicas.markIncoherent(entry, "removed");
      this.core.replicas.remove(id);
      entry.relay.retire();
      this.core.store.deleteReplica(id);
      this.core.waiter.requestPass();
      return ok({ id, replicas: this.core.replicas.ids() });
    } catch (error) {
      if (error instanceof ApiError) return fail(error);
      throw error;
    }
  }

  replicaIds(cluster: string): string[] {
    this.core.ensureCluster(cluster);
    return this.core.replicas.ids();
  }

  /** Each replica with its location hint and state: what the front door routes reads by. */
  placement(cluster: string): PlacedReplica[] {
    this.core.ensureCluster(cluster);
    const locations = this.core.locations();
    return this.core.replicas.all().map((entry) => ({
      id: entry.id,
      location: locations[entry.id] ?? null,
      state: entry.state,
    }));
  }
}
