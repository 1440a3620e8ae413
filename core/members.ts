/**
 * A cluster's members: one Durable Object each, every one able to be master
 * or replica. A member's id never changes and is never reused; which member
 * is master is the directory's to say.
 */

/** The member id of a cluster's first master. */
export const FIRST_MASTER = "node-0";

/** What a read may name to be served by whichever member is master now. */
export const MASTER_ALIAS = "master";
