/**
 * A replica bootstrapped from a snapshot holds the master's own state of the
 * snapshot's term: the next message of that term must not take it for a node
 * holding another master's tail (which would rebuild it again, for nothing).
 * The race that showed it (a snapshot finished before any heartbeat reached
 * the new replica) is played here message by message.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { nodeStub } from "../durable-objects/node-rpc";
import { freshCluster } from "./helpers";
import { heartbeat } from "./review-helpers";

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
    const answer = await nodeStub(env, c, "replica-1").append(heartbeat(c, "node-0", 1, 1, 3));
    expect(answer.diverged).toBeFalsy();
    expect(answer.appliedLsn).toBe(3);
  });

  it("still checks a later term's first LSN against what it installed", async () => {
    const c = freshCluster("snap-term-later");
    await installEmptySnapshot(c, 1, 3);
    // Term 2 began at LSN 2: this node's LSN 3 came from term 1's master and
    // is not the new master's, so it must be rebuilt.
    const answer = await nodeStub(env, c, "replica-1").append(heartbeat(c, "node-0", 2, 2, 3));
    expect(answer.diverged).toBeTruthy();
  });
});
