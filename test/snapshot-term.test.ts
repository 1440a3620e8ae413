/**
 * A replica bootstrapped from a snapshot holds the master's own state of the
 * snapshot's term: the next message of that term must not take it for a node
 * holding another master's tail (which would rebuild it again, for nothing).
 * The race that showed it (a snapshot finished before any heartbeat reached
 * the new replica) is played here message by message.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { AppendRequest } from "../core/protocol";
import { replicaSettings } from "../core/replica-settings";
import { defaultTunables } from "../core/tunables";
import { nodeStub } from "../durable-objects/node-rpc";
import { freshCluster } from "./helpers";

function heartbeat(
  cluster: string,
  term: number,
  termStartLsn: number,
  lsn: number,
): AppendRequest {
  return {
    cluster,
    replicaId: "replica-1",
    from: "node-0",
    term,
    termStartLsn,
    sentAt: Date.now(),
    masterLsn: lsn,
    leaseUntil: 0,
    commitPoint: lsn,
    settings: replicaSettings(defaultTunables()),
    records: [],
    truncatedThrough: 0,
    pull: false,
    ackedLsn: lsn,
  };
}

async function installEmptySnapshot(cluster: string, term: number, lsn: number) {
  const replica = nodeStub(env, cluster, "replica-1");
  await replica.installSnapshot({ phase: "begin", id: "s1", lsn, tables: 0, term });
  return replica.installSnapshot({
    phase: "end",
    id: "s1",
    lsn,
    logEnd: 0,
    lastTerm: term,
    term,
    tables: [],
    objects: [],
    sequence: [],
    fts5Settings: [],
  });
}

describe("a replica installed from a snapshot", () => {
  it("takes the next message of the snapshot's term as its own, not as another master's", async () => {
    // No master runs for this cluster name: the messages are the test's.
    const c = freshCluster("snap-term");
    expect((await installEmptySnapshot(c, 1, 3)).appliedLsn).toBe(3);
    const answer = await nodeStub(env, c, "replica-1").append(heartbeat(c, 1, 1, 3));
    expect(answer.diverged).toBeFalsy();
    expect(answer.appliedLsn).toBe(3);
  });

  it("still checks a later term's first LSN against what it installed", async () => {
    const c = freshCluster("snap-term-later");
    await installEmptySnapshot(c, 1, 3);
    // Term 2 began at LSN 2: this node's LSN 3 came from term 1's master and
    // is not the new master's, so it must be rebuilt.
    const answer = await nodeStub(env, c, "replica-1").append(heartbeat(c, 2, 2, 3));
    expect(answer.diverged).toBeTruthy();
  });
});
