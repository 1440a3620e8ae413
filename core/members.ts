/**
 * A cluster's members: one Durable Object each, every one able to be master
 * or replica. A member's id never changes and is never reused; which member
 * is master is the directory's to say.
 */

/** The member id of a cluster's first master. */
export const FIRST_MASTER = "node-0";

/** A member id as the API accepts it: node-0 (the first master) or replica-N. */
export const MEMBER_ID = /^(node-0|replica-[0-9]{1,4})$/;

/** What a read may name to be served by whichever member is master now. */
export const MASTER_ALIAS = "master";

/** What a node that is not master answers a master's call with (before doing anything). */
export const NOT_MASTER = "NOT_MASTER: this node is not the master";

export function isNotMaster(error: unknown): boolean {
  return error instanceof Error && error.message.includes("NOT_MASTER");
}

/** A node's cluster and member id, from its object name (`cluster:member`, node-rpc.ts). */
export function parseNodeName(
  name: string | undefined,
): { cluster: string; member: string } | null {
  if (name === undefined) return null;
  const at = name.indexOf(":");
  if (at <= 0 || at === name.length - 1) return null;
  return { cluster: name.slice(0, at), member: name.slice(at + 1) };
}
