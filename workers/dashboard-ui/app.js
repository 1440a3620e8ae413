// @ts-check
/**
 * The dashboard's controller: asks for the admin token, polls the cluster's
 * status and metrics about once a second (one poll at a time: a slow answer
 * delays the next, it never piles up), keeps each plotted value's recent
 * history, and redraws. A refused token sends the page back to the token
 * form and forgets it; any other failure is shown and the polling goes on.
 */
import { ApiError, fetchMetrics, fetchStatus } from "./api.js";
import { histogramBuckets, RateTracker, Series } from "./series.js";
import {
  CLUSTER_NAME,
  forgetToken,
  initialCluster,
  saveCluster,
  savedToken,
  saveToken,
} from "./session.js";
import {
  clearCluster,
  formatDecimal,
  formatInt,
  renderChart,
  renderCluster,
  renderReplicas,
} from "./view.js";

const POLL_MS = 1000;
/** What a sparkline shows: the last minute. */
const SPAN_MS = 60_000;
const KEEP = Math.ceil(SPAN_MS / POLL_MS) + 5;
/** The p99 looks back over this many polls, so one quiet second does not blank it. */
const P99_WINDOW = 5;

/** @param {string} id */
const element = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const login = element("login");
const clusterView = element("cluster-view");
const tokenForm = /** @type {HTMLFormElement} */ (element("token-form"));
const tokenInput = /** @type {HTMLInputElement} */ (element("token"));
const loginError = element("login-error");
const clusterForm = /** @type {HTMLFormElement} */ (element("cluster-form"));
const clusterInput = /** @type {HTMLInputElement} */ (element("cluster"));
const signOut = element("sign-out");
const connection = element("connection");
const errorBanner = element("error");

/** Everything the page has gathered about the cluster it shows; replaced on a change of cluster. */
function freshHistory() {
  return {
    rates: new RateTracker(P99_WINDOW),
    commits: new Series(KEEP),
    p99: new Series(KEEP),
    waiter: new Series(KEEP),
    /** @type {Map<string, Series>} */
    lag: new Map(),
  };
}

let cluster = initialCluster();
let history = freshHistory();
/** Bumped by every start and stop, so a poll in flight for an older run is dropped. */
let run = 0;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let timer;

/**
 * @param {"live" | "stale" | "idle"} state
 * @param {string} text
 */
function showConnection(state, text) {
  connection.dataset.state = state;
  connection.textContent = text;
}

/** @param {string} message empty hides the banner */
function showError(message) {
  errorBanner.hidden = message === "";
  errorBanner.textContent = message;
}

/** Forgets the cluster shown: its history, and everything of it on screen. */
function forgetCluster() {
  history = freshHistory();
  clearCluster(document);
  showError("");
  document.title = "dosqlite-cluster · dashboard";
}

/** Back to the token form, with nothing of the cluster left on screen. */
function showLogin(message = "") {
  run++;
  clearTimeout(timer);
  login.hidden = false;
  clusterView.hidden = true;
  signOut.hidden = true;
  loginError.textContent = message;
  forgetCluster();
  showConnection("idle", "");
  tokenInput.focus();
}

/**
 * One poll: status (required) and metrics (for the p99; the page goes on without it).
 * @param {string} token
 * @param {number} mine the run it belongs to: a newer run (another cluster) drops its answer
 */
async function poll(token, mine) {
  const [status, metrics] = await Promise.all([
    fetchStatus(cluster, token),
    fetchMetrics(cluster, token).catch((error) => {
      if (error instanceof ApiError && error.status === 401) throw error;
      return null;
    }),
  ]);
  if (mine !== run) return;
  const at = Date.now();
  const rates = history.rates.add({
    at,
    incarnation: `${status.master.id}/${status.master.epoch}`,
    commits: status.master.commits,
    inlineWaits: status.master.waiter.inlineWaits,
    commitWait: metrics === null ? null : commitWaitBuckets(metrics),
  });
  history.commits.push(at, rates.commitsPerSecond);
  history.p99.push(at, rates.p99CommitWaitMs);
  history.waiter.push(at, status.master.waiter.outstanding);
  for (const replica of status.replicas) {
    const series = history.lag.get(replica.id) ?? new Series(KEEP);
    series.push(at, replica.lagMs);
    history.lag.set(replica.id, series);
  }
  renderCluster(document, status);
  renderReplicas(document, status, history.lag, { now: at, span: SPAN_MS });
  renderChart(document, "commits", history.commits, {
    span: SPAN_MS,
    floor: 1,
    format: formatDecimal,
  });
  renderChart(document, "p99", history.p99, { span: SPAN_MS, floor: 10, format: formatDecimal });
  renderChart(document, "waiter", history.waiter, { span: SPAN_MS, floor: 4, format: formatInt });
  document.title = `${cluster} · dosqlite-cluster`;
}

/**
 * The commit wait of commits (handed off or inline), not of replayed
 * requests, which wait on another request's commit.
 * @param {string} metrics
 */
function commitWaitBuckets(metrics) {
  return histogramBuckets(metrics, "dosql_commit_wait_ms", (labels) => labels.path !== "replay");
}

/**
 * Polls until stopped, a poll at most every POLL_MS.
 * @param {string} token
 * @param {number} mine this run's number
 */
async function loop(token, mine) {
  const started = Date.now();
  try {
    await poll(token, mine);
    if (mine !== run) return;
    showError("");
    showConnection("live", `live · ${new Date().toLocaleTimeString()}`);
  } catch (error) {
    if (mine !== run) return;
    if (error instanceof ApiError && error.status === 401) {
      forgetToken();
      showLogin("The admin token was refused.");
      return;
    }
    const message = error instanceof ApiError ? `${error.code}: ${error.message}` : `${error}`;
    showError(`Could not read cluster ${cluster}: ${message}`);
    showConnection("stale", "stale");
  }
  const wait = Math.max(0, POLL_MS - (Date.now() - started));
  timer = setTimeout(() => loop(token, mine), wait);
}

/** @param {string} token */
function start(token) {
  run++;
  clearTimeout(timer);
  login.hidden = true;
  clusterView.hidden = false;
  signOut.hidden = false;
  clusterInput.value = cluster;
  void loop(token, run);
}

tokenForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const token = tokenInput.value.trim();
  tokenInput.value = "";
  if (token === "") return;
  // Tried once before it is kept, so a mistyped token is never stored.
  try {
    await fetchStatus(cluster, token);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      loginError.textContent = "The admin token was refused.";
      return;
    }
  }
  saveToken(token);
  loginError.textContent = "";
  start(token);
});

clusterForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const name = clusterInput.value.trim();
  if (!CLUSTER_NAME.test(name)) {
    // Said beside the field: the error banner belongs to the polls, which clear it.
    clusterInput.setCustomValidity(
      "a-z, 0-9, _ and -, starting with a letter or digit, at most 63",
    );
    clusterInput.reportValidity();
    return;
  }
  // Another cluster: nothing of this one may stay on screen, even if the new one never answers.
  if (name !== cluster) forgetCluster();
  cluster = name;
  saveCluster(cluster);
  const token = savedToken();
  if (token !== null) start(token);
});

clusterInput.addEventListener("input", () => clusterInput.setCustomValidity(""));

signOut.addEventListener("click", () => {
  forgetToken();
  showLogin();
});

clusterInput.value = cluster;
const token = savedToken();
if (token === null) showLogin();
else start(token);
