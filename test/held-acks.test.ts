import { describe, expect, it } from "vitest";
import { HeldAcks } from "../core/held-acks";

describe("HeldAcks", () => {
  it("counts a held ack against the window until it falls due, and forgets it once acked", () => {
    const held = new HeldAcks();
    held.expect(5, 0, 10, 100, 0);
    held.expect(8, 20, 30, 100, 0);
    expect(held.firstDueAt).toBe(110);
    expect(held.dueCount(109)).toBe(0);
    expect(held.dueCount(110)).toBe(1);
    expect(held.dueCount(130)).toBe(2);
    held.acked(5);
    expect(held.firstDueAt).toBe(130);
    held.acked(9);
    expect(held.firstDueAt).toBeUndefined();
  });

  it("a reply to a message sent after the earliest held ack fell due moves that ack's due time (the replica lost it)", () => {
    const held = new HeldAcks();
    held.expect(5, 0, 10, 100, 0);
    // Sent at 150, after the ack of 5 fell due at 110, and came back without it.
    held.expect(null, 150, 160, 100, 0);
    expect(held.firstDueAt).toBe(260);
  });

  it("does not hold an ack for a batch the master already has an ack for", () => {
    const held = new HeldAcks();
    held.expect(5, 0, 10, 100, 7);
    expect(held.firstDueAt).toBeUndefined();
    held.clear();
    expect(held.dueCount(1000)).toBe(0);
  });
});
