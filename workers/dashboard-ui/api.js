// @ts-check
/**
 * The two admin routes the dashboard polls, called with the admin token as a
 * bearer header (never a cookie, never in a URL): the status document and the
 * Prometheus text of one cluster. Same origin, no credentials mode, so the
 * browser adds nothing of its own to the requests.
 */

/** An answer other than 2xx, with the API's error code when the body has one. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** A poll that takes longer than this is abandoned; the next one starts afresh. */
const TIMEOUT_MS = 5000;

/**
 * @param {string} path
 * @param {string} token
 * @returns {Promise<Response>}
 */
async function get(path, token) {
  const response = await fetch(path, {
    headers: { authorization: `Bearer ${token}` },
    cache: "no-store",
    credentials: "omit",
    redirect: "error",
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  if (response.ok) return response;
  let code = `HTTP_${response.status}`;
  let message = response.statusText;
  try {
    const body = /** @type {{ error?: { code?: string, message?: string } }} */ (
      await response.json()
    );
    code = body.error?.code ?? code;
    message = body.error?.message ?? message;
  } catch {
    // Not the API's error body (a proxy's page, say): the status says enough.
  }
  throw new ApiError(response.status, code, message);
}

/**
 * GET /admin/clusters/{cluster}/status (docs/operations.md, "Status").
 * @param {string} cluster
 * @param {string} token
 * @returns {Promise<import("./view.js").Status>}
 */
export async function fetchStatus(cluster, token) {
  const response = await get(`/admin/clusters/${encodeURIComponent(cluster)}/status`, token);
  return response.json();
}

/**
 * GET /metrics?cluster= (docs/operations.md, "Metrics").
 * @param {string} cluster
 * @param {string} token
 */
export async function fetchMetrics(cluster, token) {
  const response = await get(`/metrics?cluster=${encodeURIComponent(cluster)}`, token);
  return response.text();
}
