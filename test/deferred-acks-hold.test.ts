import { describe, expect, it } from "vitest";
import type { AppendRequest } from "../core/protocol";
import { DeferredAcks } from "../durable-objects/replica/deferred-acks";

const request = (ackDelayMs: number) =>
  ({
    cluster: "c",
    replicaId: "replica-1",
    sentAt: 0,
    settings: { ackDelayMs },
  }) as unknown as AppendRequest;

const acks = () =>
  new DeferredAcks(
    () => {
      throw new Error("no ack goes as a call of its own in this test");
    },
    () => true,
  );

describe("a message fetching a held ack", () => {
  it("waits until the replica's own earliest ack is due, not the master's count from its reply", async () => {
    const deferred = acks();
    deferred.defer(request(300), 7);
    // The master counts the delay from the reply it got, a transit after the
    // apply: it asks for more than is left here.
    const hold = deferred.holdFor(320);
    expect(hold).toBeGreaterThan(250);
    expect(hold).toBeLessThanOrEqual(300);
    await new Promise((r) => setTimeout(r, 120));
    expect(deferred.holdFor(320)).toBeLessThanOrEqual(300 - 100);
  });

  it("answers at once when the ack is already due, and waits what was asked when none is held", async () => {
    const deferred = acks();
    expect(deferred.holdFor(250)).toBe(250);
    deferred.defer(request(20), 3);
    await new Promise((r) => setTimeout(r, 40));
    // Due but not yet taken: no wait.
    expect(deferred.holdFor(250)).toBe(0);
    deferred.drain();
    expect(deferred.holdFor(250)).toBe(0);
    expect(deferred.take()?.appliedLsn).toBe(3);
    expect(deferred.holdFor(250)).toBe(250);
  });
});
