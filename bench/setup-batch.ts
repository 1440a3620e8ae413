/** How the load drivers (Node and in-runtime alike) create and drop their clients' tables. */

/**
 * A CREATE or DROP TABLE costs every node time that grows with the schema
 * (its capture triggers and its look at every table): beside 1,000 tables, 64
 * in one request took a replica longer than rep_timeout_ms to apply, and the
 * set-up failed NOT_DURABLE. A few per request keep each apply short.
 */
export const TABLES_PER_REQUEST = 8;
