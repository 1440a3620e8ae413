// @ts-check
/**
 * Where the page keeps the admin token and the cluster it shows: this tab's
 * sessionStorage. The token is never put in a URL (it would reach history,
 * logs and Referer headers) nor in a cookie (the browser would send it on its
 * own, to requests another site makes it send); closing the tab forgets it.
 * docs/security.md, "The dashboard".
 */

const TOKEN = "dosql.adminToken";
const CLUSTER = "dosql.cluster";

/** The cluster the API serves when none is named (docs/api.md, GET /metrics). */
export const DEFAULT_CLUSTER = "main";
/** A cluster name the API accepts (docs/api.md). */
export const CLUSTER_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** @returns {string | null} */
export function savedToken() {
  return sessionStorage.getItem(TOKEN);
}

/** @param {string} token */
export function saveToken(token) {
  sessionStorage.setItem(TOKEN, token);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN);
}

/**
 * The cluster to show: `?cluster=` (a link to one cluster's dashboard), else
 * the last one shown in this tab, else the API's default.
 * @returns {string}
 */
export function initialCluster() {
  const named = new URLSearchParams(location.search).get("cluster");
  for (const candidate of [named, sessionStorage.getItem(CLUSTER)]) {
    if (candidate !== null && CLUSTER_NAME.test(candidate)) return candidate;
  }
  return DEFAULT_CLUSTER;
}

/**
 * Remembers the cluster for this tab and puts it in the address (a cluster's
 * name is no secret), so a reload or a copied link shows the same one.
 * @param {string} cluster
 */
export function saveCluster(cluster) {
  sessionStorage.setItem(CLUSTER, cluster);
  const url = new URL(location.href);
  url.searchParams.set("cluster", cluster);
  history.replaceState(null, "", url);
}
