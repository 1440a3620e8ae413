// @ts-check
/**
 * Puts a status document on the page: the topology and term, the waiter, and
 * one row per replica, updated in place (a row keeps its element while its
 * replica exists, so the eye and a test can follow it). Every value goes in
 * through textContent or an attribute, never as markup: a replica's reason or
 * error is text from the server and must stay text.
 */
import { drawSparkline } from "./sparkline.js";

/**
 * @typedef {object} ReplicaStatus The fields of a replica the page shows (docs/operations.md, "Status").
 * @property {string} id
 * @property {"coherent" | "incoherent" | "catching-up"} state
 * @property {string | null} incoherentReason
 * @property {string | null} [location]
 * @property {number} ackedLsn
 * @property {number} lagMs
 * @property {number} bytesBehind
 * @property {number} avgAckMs
 * @property {number | null} lastAckAt
 * @property {string | null} [lastError]
 */

/**
 * @typedef {object} Status The status document, as far as the page reads it.
 * @property {string} cluster
 * @property {{ id: string, location?: string | null, lsn: number, term: number, epoch: number,
 *   writersBusy: number, writersQueued: number, commits: number, commitPoint?: number,
 *   waiter: { outstanding: number, handedOffNow?: number, peakOutstanding?: number,
 *     handedOff: number, inlineWaits: Record<string, number> } }} master
 * @property {ReplicaStatus[]} replicas
 */

/** @typedef {import("./series.js").Series} Series */

/**
 * @param {ParentNode} root
 * @param {string} field
 * @param {string} text
 */
function setField(root, field, text) {
  const element = root.querySelector(`[data-field="${field}"]`);
  if (element !== null && element.textContent !== text) element.textContent = text;
}

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });

/** @param {number | null | undefined} n */
export const formatInt = (n) => (n === null || n === undefined ? "–" : integer.format(n));
/** @param {number | null | undefined} n */
export const formatDecimal = (n) => (n === null || n === undefined ? "–" : decimal.format(n));

/**
 * "3.2 s ago" for a master-clock time, against the page's clock: close enough
 * for a glance; the exact time is in the cell's title.
 * @param {number | null} at
 * @param {number} now
 */
function ago(at, now) {
  if (at === null) return "never";
  const seconds = Math.max(0, (now - at) / 1000);
  return seconds < 60
    ? `${decimal.format(seconds)} s ago`
    : `${integer.format(seconds / 60)} min ago`;
}

/**
 * The master's facts, the waiter's counters, and a card per member.
 * @param {Document} page
 * @param {Status} status
 */
export function renderCluster(page, status) {
  const { master, replicas } = status;
  const topology = /** @type {HTMLElement} */ (page.getElementById("topology"));
  const where = master.location ? ` (${master.location})` : "";
  setField(topology, "master", `${master.id}${where}`);
  setField(topology, "term", formatInt(master.term));
  setField(topology, "epoch", formatInt(master.epoch));
  setField(topology, "lsn", formatInt(master.lsn));
  setField(topology, "commitPoint", formatInt(master.commitPoint));
  setField(topology, "writers", `${master.writersBusy} / ${master.writersQueued}`);
  const coherent = replicas.filter((r) => r.state === "coherent").length;
  setField(topology, "coherent", `${coherent} of ${replicas.length}`);

  const waiter = /** @type {HTMLElement} */ (page.getElementById("waiter"));
  setField(waiter, "outstanding", formatInt(master.waiter.outstanding));
  setField(waiter, "handedOffNow", formatInt(master.waiter.handedOffNow));
  setField(waiter, "peakOutstanding", formatInt(master.waiter.peakOutstanding));
  setField(waiter, "handedOff", formatInt(master.waiter.handedOff));
  for (const [reason, count] of Object.entries(master.waiter.inlineWaits)) {
    setField(waiter, `inline-${reason}`, formatInt(count));
  }

  const nodes = /** @type {HTMLElement} */ (page.getElementById("nodes"));
  const cards = [{ id: master.id, role: "master", state: "master" }].concat(
    replicas.map((r) => ({ id: r.id, role: "replica", state: r.state })),
  );
  const items = cards.map(({ id, role, state }) => {
    const item = page.createElement("li");
    item.dataset.member = id;
    item.dataset.state = state;
    const name = page.createElement("strong");
    name.textContent = id;
    const what = page.createElement("span");
    what.textContent = role === "master" ? `master · term ${master.term}` : state;
    item.append(name, what);
    return item;
  });
  nodes.replaceChildren(...items);
}

const COLUMNS = [
  "id",
  "state",
  "reason",
  "location",
  "ackedLsn",
  "behind",
  "lagMs",
  "lagChart",
  "bytesBehind",
  "avgAckMs",
  "lastAck",
];
const NUMERIC = new Set(["ackedLsn", "behind", "lagMs", "bytesBehind", "avgAckMs", "lastAck"]);

/**
 * A new row for a replica: one cell per column, each named by data-field.
 * @param {Document} page
 * @param {string} id
 */
function newRow(page, id) {
  const row = page.createElement("tr");
  row.dataset.replica = id;
  for (const column of COLUMNS) {
    const cell = page.createElement(column === "id" ? "th" : "td");
    if (column === "id") cell.setAttribute("scope", "row");
    cell.dataset.field = column;
    if (NUMERIC.has(column)) cell.className = "num";
    if (column === "lagChart") {
      cell.append(page.createElementNS("http://www.w3.org/2000/svg", "svg"));
    }
    row.append(cell);
  }
  return row;
}

/**
 * One row per replica, in the status's order, each with its lag history.
 * @param {Document} page
 * @param {Status} status
 * @param {Map<string, Series>} lag each replica's lagMs, by id
 * @param {{ now: number, span: number }} clock
 */
export function renderReplicas(page, status, lag, clock) {
  const body = /** @type {HTMLTableSectionElement} */ (page.querySelector("#replicas tbody"));
  /** @type {Map<string, HTMLTableRowElement>} */
  const rows = new Map();
  for (const row of body.rows) rows.set(row.dataset.replica ?? "", row);
  const ordered = status.replicas.map((replica) => {
    const row = rows.get(replica.id) ?? newRow(page, replica.id);
    row.dataset.state = replica.state;
    setField(row, "id", replica.id);
    setField(row, "state", replica.state);
    setField(row, "reason", replica.incoherentReason ?? "");
    setField(row, "location", replica.location ?? "–");
    setField(row, "ackedLsn", formatInt(replica.ackedLsn));
    setField(row, "behind", formatInt(Math.max(0, status.master.lsn - replica.ackedLsn)));
    setField(row, "lagMs", formatInt(replica.lagMs));
    setField(row, "bytesBehind", formatInt(replica.bytesBehind));
    setField(row, "avgAckMs", formatDecimal(replica.avgAckMs));
    setField(row, "lastAck", ago(replica.lastAckAt, clock.now));
    const last = row.querySelector('[data-field="lastAck"]');
    last?.setAttribute(
      "title",
      replica.lastAckAt === null ? "" : new Date(replica.lastAckAt).toISOString(),
    );
    const reason = row.querySelector('[data-field="reason"]');
    reason?.setAttribute("title", replica.lastError ?? "");
    const chart = row.querySelector('[data-field="lagChart"] svg');
    const history = lag.get(replica.id);
    if (chart instanceof SVGSVGElement && history !== undefined) {
      drawSparkline(chart, history.points, { span: clock.span, floor: 10 });
    }
    return row;
  });
  // Appending an element already in the body moves it: the rows end in status order.
  body.append(...ordered);
  for (const [id, row] of rows) {
    if (!status.replicas.some((r) => r.id === id)) row.remove();
  }
}

/**
 * Takes off the page everything a cluster put there: the topology's and the
 * waiter's values, the member cards, the replica rows and the sparklines. Run
 * when the page turns to another cluster (or back to the token form), before
 * that cluster's first answer: one that never comes (a 503, a 404, a timeout)
 * must leave an error beside empty panels, not beside the previous cluster's
 * values under the new cluster's name.
 * @param {Document} page
 */
export function clearCluster(page) {
  for (const panel of ["topology", "waiter"]) {
    for (const field of page.querySelectorAll(`#${panel} [data-field]`)) field.textContent = "";
  }
  page.getElementById("nodes")?.replaceChildren();
  page.querySelector("#replicas tbody")?.replaceChildren();
  for (const figure of page.querySelectorAll("[data-chart]")) {
    figure.querySelector("svg")?.replaceChildren();
    for (const text of figure.querySelectorAll("[data-value], [data-scale]")) text.textContent = "";
  }
}

/**
 * One sparkline panel: the history, its latest value, and the ceiling it is drawn against.
 * @param {Document} page
 * @param {string} name the figure's data-chart
 * @param {Series} series
 * @param {{ span: number, floor: number, format: (n: number | null) => string }} options
 */
export function renderChart(page, name, series, options) {
  const figure = page.querySelector(`[data-chart="${name}"]`);
  const svg = figure?.querySelector("svg");
  if (figure === null || !(svg instanceof SVGSVGElement)) return;
  const { max, span } = drawSparkline(svg, series.points, options);
  const value = figure.querySelector("[data-value]");
  if (value !== null) value.textContent = options.format(series.last());
  const scale = figure.querySelector("[data-scale]");
  if (scale !== null)
    scale.textContent = `0 – ${options.format(max)}, last ${Math.round(span / 1000)} s`;
}
